"""Answers people can act on, in a real browser: a refusal shows no confidence, a table row of a
real PDF answers its question with the row highlighted, a citation mark selects its claim, and
an answer whose document was deleted says "source changed" and is re-verified as a new, linked
audit record. Screenshots: tests/screenshots/<test-name>-<state>.png."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from apps.audits.models import AuditRecord
from apps.documents import services as documents
from apps.queries.models import QueryRun
from apps.queries.services import query_answer
from tests.browser.conftest import log_in, screenshot
from tests.conftest import ROOT
from tests.queries.test_generation import LIGHTHOUSE

pytestmark = [pytest.mark.django_db(transaction=True)]

NICS = ROOT.parent / "shared" / "data" / "docs" / "pdf" / "nics-background-checks-2015-11.pdf"
QUESTION = "When was the Skerryvore lighthouse built and how tall is it?"
# The worker loads the embedding model on its first task.
ANSWER_TIMEOUT_MS = 90_000


def ingest(personas, filename: str, data: bytes):
    document, _ = documents.document_create(workspace=personas.workspace_a, actor=None, filename=filename, data=data, enqueue=False)
    return documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)


def test_a_refused_question_shows_who_refused_and_no_confidence(personas, password, page, request):
    ingest(personas, "skerryvore.txt", LIGHTHOUSE.encode())
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION, threshold_override=0.99)
    log_in(page, personas.member.user.username, password)
    page.goto(f"/w/acme/answers/{run.pk}/")
    answer = page.locator("section.answer")
    expect(answer.locator("h2")).to_contain_text("Refused")
    expect(answer.locator(".refused-by")).to_contain_text("Refused by the confidence gate")
    expect(answer.locator(".refusal-score")).to_contain_text("against the gate threshold 0.990")
    expect(answer).to_contain_text("no confidence score and no risk label")
    expect(page.locator("#confidence-meter")).to_have_count(0)
    expect(page.locator(".badge.risk-low")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("100 %")
    screenshot(page, request, "-refused")


def test_the_texas_row_of_the_nics_pdf_answers_with_the_row_highlighted(personas, password, celery_worker, page, request):
    ingest(personas, NICS.name, NICS.read_bytes())
    log_in(page, personas.member.user.username, password)
    page.goto("/w/acme/ask/")
    page.locator("textarea[name=question]").fill("How many firearm background checks were run in Texas?")
    page.get_by_role("radio", name="Verified").check()
    page.get_by_role("button", name="Ask", exact=True).click()
    first = page.locator("ol.claims li.claim").first
    expect(first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    expect(first.locator(".claim-quote")).to_contain_text("Texas 21,550")
    expect(first.locator(".badge")).to_have_text("supports")
    highlighted = page.locator('#passage-panel figure[data-passage="1"] mark')
    expect(highlighted).to_be_visible()
    expect(highlighted).to_contain_text("Texas 21,550")
    expect(highlighted).to_contain_text("146,982")
    mark = page.locator('#final-answer a.cite[data-claim="1"]')
    expect(mark).to_have_text(re.compile(r"^\[\d+\]$"))
    cited = mark.inner_text().strip("[]")
    expect(page.locator(f"ol.cited-sources #source-{cited}")).to_contain_text("nics-background-checks")
    screenshot(page, request, "-answered")


def test_a_citation_mark_selects_its_claim_and_shows_its_quote(personas, password, page, request):
    ingest(personas, "skerryvore.txt", LIGHTHOUSE.encode())
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION)
    assert len(run.claims) >= 2, run.claims
    log_in(page, personas.viewer.user.username, password)
    page.goto(f"/w/acme/answers/{run.pk}/")
    page.evaluate("window.__samePage = true")
    expect(page.locator('button.claim-select[data-claim="1"]')).to_have_attribute("aria-pressed", "true")
    page.locator('#final-answer a.cite[data-claim="2"]').click()
    expect(page.locator('button.claim-select[data-claim="2"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator('button.claim-select[data-claim="1"]')).to_have_attribute("aria-pressed", "false")
    second = page.locator('#passage-panel figure[data-passage="2"]')
    expect(second).to_be_visible()
    expect(second.locator("mark")).to_have_text(run.claims[1]["quote"])
    expect(page.locator('#passage-panel figure[data-passage="1"]')).to_be_hidden()
    assert page.evaluate("window.__samePage === true"), "the mark selected its claim in place"


def test_a_deleted_source_marks_the_answer_and_reverification_records_a_linked_record(personas, password, page, request):
    document = ingest(personas, "skerryvore.txt", LIGHTHOUSE.encode())
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION)
    original = AuditRecord.objects.get(query_run_id=run.pk)
    documents.document_delete(workspace=personas.workspace_a, actor=personas.owner, document_id=document.pk)

    log_in(page, personas.member.user.username, password)
    page.goto(f"/w/acme/answers/{run.pk}/")
    banner = page.locator(".source-changed-banner")
    expect(banner).to_contain_text("source changed")
    expect(banner).to_contain_text("skerryvore: the document was deleted")
    screenshot(page, request, "-source-changed")

    banner.get_by_role("button", name="Re-verify against the current text").click()
    expect(page.locator(".messages li.success")).to_contain_text("Re-verified against the sources' current text")
    expect(page.locator(".reverification-of")).to_contain_text("A re-verification of")
    verdicts = page.locator("ol.claims li.claim .badge")
    expect(verdicts.first).to_have_text("source deleted — cannot be checked")
    assert set(verdicts.all_inner_texts()) == {"source deleted — cannot be checked"}, "a gone source is no hallucination"
    expect(page.locator("ol.stages")).not_to_contain_text("pending")
    again = QueryRun.objects.get(reverifies=run)
    assert AuditRecord.objects.get(query_run_id=again.pk).payload["reverification_of"]["audit_id"] == str(original.pk)

    page.goto("/w/acme/audit/")
    rows = page.locator("table.records tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator(f"#record-{original.sequence + 1}")).to_contain_text(f"re-verification of #{original.sequence}")
    expect(page.locator(f"#record-{original.sequence}")).to_contain_text("source changed")
    screenshot(page, request, "-history")
