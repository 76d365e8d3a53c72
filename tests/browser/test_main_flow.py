"""The main flows in a real browser: Playwright drives Debian's headless Chromium against the live server.

`scripts/install-browser.sh` installs /usr/bin/chromium; Playwright never downloads a browser
of its own. Each test leaves a screenshot in tests/screenshots/<test-name>.png.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, screenshot
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db(transaction=True)]

# The worker loads the embedding model on its first task, so the first ingestion is slow.
INGESTION_TIMEOUT_MS = 90_000

BRIDGE_TEXT = """\
The Halvorsen bridge crosses the Lysa fjord near the town of Brekkvik.
It was built in 1932 by the engineer Ingrid Halvorsen.
The Halvorsen bridge is 412 metres long and has a main span of 180 metres.
It carried a single railway track until 1978, when it was converted for road traffic.
Every summer the town of Brekkvik holds a music festival on the bridge.
"""


def squash(text: str) -> str:
    return " ".join(text.split())


def test_member_uploads_a_document_and_gets_an_answer_with_quoted_claims(personas, password, celery_worker, page, request, tmp_path):
    source = tmp_path / "halvorsen-bridge.txt"
    source.write_text(BRIDGE_TEXT)
    log_in(page, personas.member.user.username, password)

    page.goto("/w/acme/documents/")
    expect(page.get_by_text("No documents yet.")).to_be_visible()
    page.locator("input[name=files]").set_input_files(source)
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".messages")).to_contain_text("“halvorsen-bridge.txt” uploaded; ingestion has started.")

    # Mark this page load: if the row turns Ready with the mark still there, htmx polling
    # updated the table in place; a full reload would have wiped it.
    page.evaluate("window.__sameDocument = true")
    row = page.locator("#document-table tbody tr", has_text="halvorsen-bridge.txt")
    expect(row.locator(".badge")).to_have_text("Ready", timeout=INGESTION_TIMEOUT_MS)
    assert page.evaluate("window.__sameDocument === true"), "the document table did not update in place"
    expect(row).to_contain_text("halvorsen-bridge")
    assert int(row.locator("td").nth(3).inner_text()) >= 1, "the ready document has no chunks"

    page.get_by_role("link", name="Ask", exact=True).click()
    page.locator("textarea[name=question]").fill("How long is the Halvorsen bridge?")
    page.get_by_role("radio", name="Verified").check()
    page.get_by_role("button", name="Ask", exact=True).click()

    expect(page.locator("h1.question")).to_have_text("How long is the Halvorsen bridge?")
    expect(page.locator("section.answer")).to_contain_text("412 metres")
    claims = page.locator("ol.claims li.claim")
    expect(claims.first).to_be_visible()
    uploaded = squash(BRIDGE_TEXT)
    supported_quotes = []
    for claim in claims.all():
        quote = squash(claim.locator(".claim-quote").inner_text()).strip("“” ")
        verdict = claim.locator(".badge").inner_text().strip()
        if quote and quote in uploaded and verdict == "supports":
            supported_quotes.append(quote)
    assert supported_quotes, "no claim quotes the uploaded text with a “supports” verdict"
    assert any("412 metres" in q for q in supported_quotes), supported_quotes
    expect(page.locator("ol.claims .claim-meta").first).to_contain_text("halvorsen-bridge")
    expect(page.locator("ol.sources")).to_contain_text("halvorsen-bridge")
    screenshot(page, request)


def test_owner_invites_a_user_by_email_who_accepts_and_lands_in_the_workspace(personas, password, browser, live_server, page, request):
    UserFactory(username="nadia", email="nadia@example.org")
    log_in(page, personas.owner.user.username, password)

    page.goto("/w/acme/members/")
    expect(page.get_by_role("heading", name="Members of Acme Research")).to_be_visible()
    page.get_by_label("Username or e-mail").fill("Nadia@Example.org")
    page.locator("select[name=role]").last.select_option("viewer")
    page.get_by_role("button", name="Invite", exact=True).click()

    expect(page.locator(".messages li.success")).to_have_text(
        "Invitation for “nadia@example.org” sent: they join as viewer when they accept it."
    )
    expect(page.locator("section.invitations tbody tr", has_text="nadia@example.org")).to_contain_text("Viewer")
    expect(page.get_by_label("Role of nadia")).to_have_count(0)  # invited, not yet a member

    nadia = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    try:
        nadia_page = nadia.new_page()
        log_in(nadia_page, "nadia", password)
        expect(nadia_page.get_by_role("heading", name="Your workspaces")).to_be_visible()
        invitation = nadia_page.locator("section.invitations tbody tr", has_text="Acme Research")
        expect(invitation).to_contain_text("Viewer")
        expect(invitation).to_contain_text("olivia")
        expect(nadia_page.locator("table.memberships")).to_have_count(0)
        screenshot(nadia_page, request, "-invited")
        invitation.get_by_role("button", name="Accept the invitation to Acme Research").click()
        expect(nadia_page.get_by_role("heading", name="Ask Acme Research")).to_be_visible()
        expect(nadia_page.locator(".messages li.success")).to_have_text("You joined Acme Research as viewer.")
        screenshot(nadia_page, request)
    finally:
        nadia.close()

    page.goto("/w/acme/members/")
    expect(page.locator("tbody tr", has_text="nadia").get_by_label("Role of nadia")).to_have_value("viewer")
    expect(page.locator("section.invitations")).to_contain_text("No pending invitation.")


def test_viewer_sees_no_upload_or_ask_form(personas, password, page, request):
    log_in(page, personas.viewer.user.username, password)

    page.goto("/w/acme/documents/")
    expect(page.get_by_role("heading", name="Documents", exact=True)).to_be_visible()
    expect(page.get_by_text("No documents yet.")).to_be_visible()
    expect(page.locator("input[type=file]")).to_have_count(0)
    expect(page.get_by_role("button", name="Upload")).to_have_count(0)

    page.goto("/w/acme/ask/")
    expect(page.get_by_role("heading", name="Ask Acme Research")).to_be_visible()
    expect(page.get_by_text("No questions asked yet.")).to_be_visible()
    expect(page.locator("textarea")).to_have_count(0)
    expect(page.get_by_role("button", name="Ask", exact=True)).to_have_count(0)
    screenshot(page, request)
