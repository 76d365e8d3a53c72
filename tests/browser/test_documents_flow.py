"""The Documents page in a real browser: uploads, the drop zone, live progress, failures and deletion.

Playwright drives Debian's headless Chromium (/usr/bin/chromium) against the live server, as in
test_main_flow.py; a real Celery worker ingests what is uploaded. Each test leaves a screenshot
in tests/screenshots/<test-name>.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from apps.documents.models import Document
from tests.browser.conftest import log_in, screenshot
from tests.conftest import wait_until
from tests.pipeline.test_parsing_kinds import FIXTURES
from tests.scans import scanned_pdf

pytestmark = [pytest.mark.django_db(transaction=True)]

_SHARED_DOCS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "docs"
DOCS = _SHARED_DOCS if _SHARED_DOCS.is_dir() else Path("/work/shared/data/docs")
WARN_REPORT = DOCS / "pdf" / "WARN-Report-for-7-1-2015-to-03-25-2016.pdf"
WARN_REPORT_PAGES = 16

# The worker loads the embedding model on its first task, so the first ingestion is slow.
INGESTION_TIMEOUT_S = 120
INGESTION_TIMEOUT_MS = INGESTION_TIMEOUT_S * 1000

# One row of #document-table as the browser shows it right now. The table is replaced
# wholesale by each htmx poll, so the row is looked up afresh by its id every time.
ROW_STATE = """(id) => {
  const row = document.getElementById(id);
  if (!row) return null;
  const progress = row.querySelector("progress");
  const note = row.querySelector(".badge ~ small.meta");
  return {
    status: row.dataset.status,
    badge: row.querySelector(".badge").textContent.trim(),
    progress: progress ? {value: progress.value, max: progress.max} : null,
    note: note ? note.textContent.trim() : null,
  };
}"""

BADGES = {"queued": "Queued", "processing": "Processing", "ready": "Ready", "failed": "Failed"}


@pytest.fixture
def member_on_documents(personas, password, page) -> Page:
    log_in(page, personas.member.user.username, password)
    page.goto("/w/acme/documents/")
    expect(page.get_by_role("heading", name="Documents", exact=True)).to_be_visible()
    return page


def upload(page: Page, *files) -> None:
    """Choose files with the plain file input and press Upload, as a user without drag and drop would."""
    page.locator("input[name=files]").set_input_files(list(files))
    page.get_by_role("button", name="Upload").click()


def document_row(page: Page, filename: str):
    return page.locator("#document-table tbody tr", has_text=filename)


def text_file(name: str, text: str) -> dict:
    return {"name": name, "mimeType": "text/plain", "buffer": text.encode()}


def test_member_uploads_a_pdf_and_watches_its_progress_bar_reach_ready(member_on_documents, celery_worker, request):
    page = member_on_documents
    assert WARN_REPORT.is_file(), f"the shared sample PDF is missing: {WARN_REPORT}"
    upload(page, WARN_REPORT)
    expect(page.locator(".messages li.success")).to_have_text(f"“{WARN_REPORT.name}” uploaded; ingestion has started.")

    # Mark this page load: if the row turns Ready with the mark still there, htmx polling
    # updated the table in place; a full reload would have wiped it.
    page.evaluate("window.__sameDocument = true")
    row = document_row(page, WARN_REPORT.name)
    expect(row).to_have_count(1)
    row_id = row.get_attribute("id")

    observations: list[dict] = []
    mid_progress: list[Path] = []

    def settled() -> bool:
        state = page.evaluate(ROW_STATE, row_id)
        assert state is not None, f"row {row_id} vanished from the table; seen so far: {observations}"
        observations.append(state)
        progress = state["progress"]
        if not mid_progress and progress and 0 < progress["value"] < progress["max"]:
            mid_progress.append(screenshot(page, request, "-mid-progress"))
        return state["status"] in ("ready", "failed")

    wait_until(settled, timeout=INGESTION_TIMEOUT_S, interval=0.1, what="the PDF to settle")

    final = observations[-1]
    assert final["status"] == "ready", f"the PDF did not ingest: {final}; {Document.objects.get().error}"
    unsettled = [s for s in observations if s["status"] in ("queued", "processing")]
    assert unsettled, f"the row was never seen Queued or Processing before Ready: {observations}"
    assert all(s["progress"] is not None for s in unsettled), f"an unsettled row had no progress bar: {observations}"
    for state in observations:
        assert state["badge"] == BADGES[state["status"]], state
    for state in unsettled:
        progress = state["progress"]
        assert 0 <= progress["value"] <= progress["max"], state
        if state["status"] == "processing" and progress["value"] > 0:
            assert state["note"] == f"{int(progress['value'])} / {int(progress['max'])} chunks", state
    values = [s["progress"]["value"] for s in unsettled]
    if mid_progress:
        assert values == sorted(values), f"the progress bar went backwards: {values}"

    expect(row.locator(".badge")).to_have_text("Ready")
    expect(row).to_have_attribute("data-status", "ready")
    assert page.evaluate("window.__sameDocument === true"), "the document table did not update in place"
    cells = row.locator("td")
    expect(cells.nth(2)).to_have_text(f"{WARN_REPORT_PAGES} pages")
    assert int(cells.nth(3).inner_text()) > 0, "the ready PDF has no chunks"
    expect(row.locator("progress")).to_have_count(0)
    expect(row).not_to_contain_text("chunks")
    # Nothing is pending any more, so the table stops polling.
    expect(page.locator("#document-table")).not_to_have_attribute("hx-trigger", re.compile(".+"))
    screenshot(page, request)


def test_a_scan_a_workbook_and_a_deck_are_read_and_their_contents_shown(member_on_documents, celery_worker, request):
    page = member_on_documents
    scan = {"name": "boots-nut-scan.pdf", "mimeType": "application/pdf", "buffer": scanned_pdf("pdf/amt_handbook_sample.pdf", pages=(1, 1))}
    kinds = {
        "founders.xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "txt-fit-text.pptx": "application/octet-stream",
    }
    upload(page, scan, *({"name": name, "mimeType": kind, "buffer": (FIXTURES / name).read_bytes()} for name, kind in kinds.items()))
    expect(page.locator(".messages li.success")).to_have_count(3)
    notes: set[str] = set()

    def scan_settled() -> bool:
        state = page.evaluate(ROW_STATE, document_row(page, "boots-nut-scan.pdf").get_attribute("id"))
        notes.add(state["note"] or "")
        return state["status"] in ("ready", "failed")

    wait_until(scan_settled, timeout=INGESTION_TIMEOUT_S, interval=0.1, what="the scan to settle")
    expected = {"boots-nut-scan.pdf": "2 pages, 2 read by OCR", "founders.xlsx": "3 rows", "txt-fit-text.pptx": "1 slide"}
    for name, contents in expected.items():
        row = document_row(page, name)
        expect(row.locator(".badge")).to_have_text("Ready", timeout=INGESTION_TIMEOUT_MS)
        expect(row.locator("td").nth(2)).to_have_text(contents)
    ocr_notes = {note for note in notes if "OCR" in note}
    assert ocr_notes <= {"0 / 2 scanned pages read by OCR", "1 / 2 scanned pages read by OCR", "2 / 2 scanned pages read by OCR"}, notes
    screenshot(page, request)


def test_dropping_files_on_the_drop_zone_uploads_them(member_on_documents, celery_worker, request):
    page = member_on_documents
    names = ["drop-alpha.txt", "drop-beta.txt"]
    files = page.evaluate_handle(
        """(names) => {
          const transfer = new DataTransfer();
          for (const name of names) {
            const text = `The file ${name} arrived by drag and drop onto the Documents page.`;
            transfer.items.add(new File([text], name, {type: "text/plain"}));
          }
          return transfer;
        }""",
        names,
    )
    zone = page.locator("form[data-dropzone] [data-dropzone-target]")
    zone.dispatch_event("dragenter", {"dataTransfer": files})
    expect(zone).to_have_class(re.compile(r"\bdragging\b"))
    zone.dispatch_event("drop", {"dataTransfer": files})

    messages = page.locator(".messages li.success")
    expect(messages).to_have_count(2)
    for name in names:
        expect(page.locator(".messages")).to_contain_text(f"“{name}” uploaded; ingestion has started.")
        expect(document_row(page, name)).to_have_count(1)
    for name in names:
        expect(document_row(page, name).locator(".badge")).to_have_text("Ready", timeout=INGESTION_TIMEOUT_MS)
    expect(page.locator("#document-table tbody tr")).to_have_count(2)
    expect(zone).not_to_have_class(re.compile(r"\bdragging\b"))
    screenshot(page, request)


def test_a_bad_file_shows_its_failure_message_in_the_table(member_on_documents, celery_worker, request):
    page = member_on_documents
    garbage = bytes((i * 131 + 7) % 256 for i in range(2048))
    upload(page, {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"%PDF-1.7\n" + garbage})
    expect(page.locator(".messages li.success")).to_have_text("“notes.txt” uploaded; ingestion has started.")

    row = document_row(page, "notes.txt")
    expect(row.locator(".badge")).to_have_text("Failed", timeout=INGESTION_TIMEOUT_MS)
    expect(row).to_have_attribute("data-status", "failed")
    expect(row.locator(".error-text")).to_contain_text("does not match its extension")
    expect(row.locator("progress")).to_have_count(0)
    screenshot(page, request)


def test_member_deletes_a_document_from_the_table(member_on_documents, celery_worker, request):
    page = member_on_documents
    upload(page, text_file("short-lived.txt", "This note is uploaded only to be deleted again.\n"))
    row = document_row(page, "short-lived.txt")
    expect(row.locator(".badge")).to_have_text("Ready", timeout=INGESTION_TIMEOUT_MS)

    questions = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    row.get_by_role("button", name="Delete short-lived.txt").click()
    expect(row).to_have_count(1)
    assert questions == ["Delete “short-lived.txt” with its chunks and its file?"]
    assert Document.objects.exists(), "dismissing the question keeps the document"

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete short-lived.txt").click()
    expect(page.locator(".messages li.success")).to_contain_text("Document deleted")
    expect(row).to_have_count(0)
    expect(page.get_by_text("No documents yet.")).to_be_visible()
    assert not Document.objects.exists(), "the document is still in the database"
    screenshot(page, request)
