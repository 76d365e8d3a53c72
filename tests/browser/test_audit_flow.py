"""From a question to its audit trail in a real browser: live stages, claims, a claim chosen
from the keyboard with its quote highlighted in the passage, then the audit history and the
record's trace. Screenshots go to tests/screenshots/; the answer page and the record are also
the README's images (docs/images/answer.png, docs/images/audit-record.png)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from apps.documents import services as documents
from apps.workspaces.services import settings_providers_update
from tests.browser.conftest import log_in, readme_screenshot, screenshot
from tests.browser.test_main_flow import BRIDGE_TEXT
from tests.fake_services import answer_json

pytestmark = [pytest.mark.django_db(transaction=True)]

QUESTION = "How long is the Halvorsen bridge and who built it?"
ANSWER_TIMEOUT_MS = 90_000  # the worker loads the embedding model on its first question


LONG = "The Halvorsen bridge is 412 metres long and has a main span of 180 metres."
BUILT = "It was built in 1932 by the engineer Ingrid Halvorsen."


@pytest.fixture
def bridge(personas, fake_llm):
    """The bridge text, indexed, and Groq (the fake server, through the workspace's own key)
    answering with two quoted claims and one whose quote is not in the source."""
    document, _ = documents.document_create(
        workspace=personas.workspace_a, actor=None, filename="halvorsen-bridge.txt", data=BRIDGE_TEXT.encode(), enqueue=False
    )
    documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    settings_providers_update(
        workspace=personas.workspace_a, actor=personas.owner, provider_order=["groq"], keys={"groq": "gsk_browserkey0005"}, clear=set()
    )
    reply = answer_json(
        ("The Halvorsen bridge is 412 metres long.", 1, LONG),
        ("Ingrid Halvorsen built it in 1932.", 1, BUILT),
        ("The bridge is painted red.", 1, "The bridge is painted a bright red every spring."),
    )
    fake_llm.script("groq", {"content": reply})


def test_ask_choose_a_claim_see_its_quote_then_find_the_answer_in_the_audit_trail(personas, password, bridge, celery_worker, page, request):
    log_in(page, personas.member.user.username, password)
    page.goto("/w/acme/ask/")
    page.locator("textarea[name=question]").fill(QUESTION)
    page.get_by_role("radio", name="Verified").check()
    page.get_by_role("button", name="Ask", exact=True).click()

    expect(page.locator("h1.question")).to_have_text(QUESTION)
    stages = page.get_by_role("list", name="Pipeline stages")
    expect(stages.locator("li")).to_have_count(7)
    expect(stages.locator("li.stage-done").first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    claims = page.locator("button.claim-select")
    expect(claims.first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator("#run")).to_have_attribute("data-status", "done")
    expect(page.locator(".trust .badge.risk")).to_contain_text("risk")
    expect(page.locator("#confidence-meter")).to_be_visible()
    expect(claims).to_have_count(3)
    expect(claims.nth(2).locator(".badge")).to_have_text("hallucinated quote")

    first_passage = page.locator("figure.passage").nth(0)
    expect(first_passage).to_be_visible()
    expect(page.locator("figure.passage").nth(1)).to_be_hidden()
    screenshot(page, request, "-answer")
    readme_screenshot(page, "answer", until="p.meta.audit")

    # Choose the second claim from the keyboard: Tab to it, then Space.
    second = claims.nth(1)
    second.focus()
    page.keyboard.press("Space")
    expect(second).to_have_attribute("aria-pressed", "true")
    expect(claims.first).to_have_attribute("aria-pressed", "false")
    expect(first_passage).to_be_hidden()
    passage = page.locator("figure.passage").nth(1)
    expect(passage).to_be_visible()
    expect(passage.locator("mark")).to_have_text(BUILT)
    expect(passage.locator("blockquote")).to_contain_text("412 metres long")  # the whole passage, around the quote
    # And back with Enter.
    claims.first.focus()
    page.keyboard.press("Enter")
    expect(first_passage).to_be_visible()
    expect(first_passage.locator("mark")).to_have_text(LONG)
    claims.nth(2).click()
    expect(page.locator("figure.passage").nth(2)).to_contain_text("is not in this source: a hallucinated quote")
    screenshot(page, request, "-claim")

    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Audit").click()
    expect(page.get_by_role("heading", name="Audit history")).to_be_visible()
    row = page.locator("table.records tbody tr", has_text=QUESTION)
    expect(row).to_have_count(1)
    page.get_by_label("Question", exact=True).fill("Halvorsen")
    expect(page).to_have_url(re.compile(r"q=Halvorsen"))  # a filtered view is a link
    expect(page.locator("table.records tbody tr")).to_have_count(1)
    page.get_by_label("Question", exact=True).fill("no such words anywhere")
    expect(page.get_by_text("No record matches these filters.")).to_be_visible()
    page.get_by_label("Question", exact=True).fill("bridge")
    expect(row).to_have_count(1)
    screenshot(page, request, "-history")

    row.get_by_role("link", name=QUESTION).click()
    expect(page.get_by_role("heading", name="Audit record #1")).to_be_visible()
    expect(page.locator(".chain")).to_contain_text("verified")
    for heading in ("1 · Retrieve", "2 · Rerank", "3 · Correct", "4 · Gate", "5 · Generate", "6 · Verify", "7 · Score", "8 · Record"):
        expect(page.get_by_role("heading", name=heading)).to_be_visible()
    expect(page.locator("#verify mark").first).to_be_visible()
    expect(page.locator("#generate")).to_contain_text("groq")
    screenshot(page, request, "-trace")
    readme_screenshot(page, "audit-record", until="section#gate")


def test_the_answer_page_fits_a_phone(personas, password, bridge, celery_worker, browser, live_server, request):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        log_in(page, personas.member.user.username, password)
        page.goto("/w/acme/ask/")
        page.locator("textarea[name=question]").fill(QUESTION)
        page.get_by_role("button", name="Ask", exact=True).click()
        expect(page.locator("button.claim-select").first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the page scrolls sideways ({width} px)"
        screenshot(page, request)
    finally:
        context.close()


def test_owner_fixes_a_refused_setting_and_finds_the_change_in_the_history(personas, password, page, request):
    log_in(page, personas.owner.user.username, password)
    page.goto("/w/acme/ask/")
    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Settings of Acme Research")).to_be_visible()
    page.get_by_label("CRAG lower threshold").fill("0.7")
    page.get_by_role("button", name="Save settings").click()
    error = page.locator("#id_crag_lower_error")
    expect(error).to_have_text("The CRAG lower threshold (0.7) must not be above the upper one (0.55).")
    expect(page.get_by_label("CRAG lower threshold")).to_have_attribute("aria-invalid", "true")
    screenshot(page, request, "-refused")

    page.get_by_label("CRAG lower threshold").fill("0.4")
    page.get_by_label("Gate threshold").fill("0.6")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".messages")).to_contain_text("Settings saved.")
    history = page.locator("table.history tbody tr").first
    expect(history).to_contain_text("crag lower: 0.35 → 0.4")
    expect(history).to_contain_text("gate threshold: 0.25 → 0.6")
    expect(history).to_contain_text("olivia")
    screenshot(page, request)
