"""Sources in a real browser: a member imports a PubMed query from the Sources page, watches it
run in the worker against the fake E-utilities server (tests/sources/fakes.py), and an answer
cites the article as "PMID …" with a link to its PubMed page. Leaves a screenshot in
tests/screenshots/<test-name>.png."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.documents.models import Document
from apps.sources.models import Source
from tests.browser.conftest import log_in, screenshot
from tests.conftest import wait_until
from tests.sources.fakes import QUERY
from tests.sources.test_sync import QUESTION

pytestmark = [pytest.mark.django_db(transaction=True)]

INGESTION_TIMEOUT_S = 180


def test_a_member_imports_a_pubmed_query_and_an_answer_cites_its_pmid(personas, password, eutils, celery_worker, page, request):
    log_in(page, personas.member.user.username, password)
    page.goto("/w/acme/")
    page.get_by_role("link", name="Sources", exact=True).click()
    expect(page.get_by_role("heading", name="Sources", exact=True)).to_be_visible()
    expect(page.get_by_text("No sources yet.")).to_be_visible()

    page.get_by_label("PubMed query").fill(QUERY)
    page.get_by_label("Articles at most").fill("3")
    page.get_by_role("button", name="Import articles").click()
    expect(page.locator(".messages")).to_contain_text("1 source(s) added")

    page.evaluate("window.__sameDocument = true")
    row = page.locator("#source-table tbody tr", has_text=QUERY)
    expect(row.locator(".badge")).to_have_text("Done", timeout=INGESTION_TIMEOUT_S * 1000)
    assert page.evaluate("window.__sameDocument === true"), "the source table did not update in place"
    expect(row).to_contain_text("3 articles: 3 added.")
    assert [c["params"]["retmax"] for c in eutils.calls("esearch")] == ["3"]

    source = Source.objects.get()
    ready = wait_until(
        lambda: Document.objects.filter(workspace=personas.workspace_a, status="ready").count() == 3,
        timeout=INGESTION_TIMEOUT_S,
        what="the imported articles indexed",
    )
    assert ready
    assert source.items.count() == 3

    page.get_by_role("link", name="Ask", exact=True).click()
    page.locator("textarea[name=question]").fill(QUESTION)
    page.get_by_role("radio", name="Verified").check()
    page.get_by_role("button", name="Ask", exact=True).click()

    expect(page.locator("h1.question")).to_have_text(QUESTION)
    citation = page.locator("a.origin", has_text="PMID 27633186").first
    expect(citation).to_be_visible()
    expect(citation).to_have_attribute("href", "https://pubmed.ncbi.nlm.nih.gov/27633186/")
    screenshot(page, request)
