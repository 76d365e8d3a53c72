"""A real file of each new kind — a scanned PDF (read by OCR), a web page, a workbook, a CSV file,
a slide deck — uploaded through the page and through the API, ingested by the Celery worker, and
asked a question whose answer quotes it, located, with the citation naming where the passage sits
("p. 1, OCR", "Feuille1, rows 2–4", "slide 1")."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from apps.documents.models import Document
from apps.queries.models import QueryRun
from tests.conftest import wait_until
from tests.pipeline.test_parsing_kinds import SCANNED, fixture
from tests.scans import original_text, recovered_share, scanned_pdf

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass(frozen=True)
class Case:
    filename: str
    question: str
    quoted: str  # what the answer's quote holds
    location: str | None  # the start of its source's location label; None: the kind has no units
    contents: str  # the documents list's "Contents" column


CASES = {
    "scanned pdf": Case(
        "boots-nut-scan.pdf",
        "What is the Boots self-locking nut designed to hold tight despite?",
        "severe vibration",
        "p. 1, OCR",
        "1 page, 1 read by OCR",
    ),
    "web page": Case("users-and-groups.html", "Which user is typically the superuser?", "superuser", None, ""),
    "workbook": Case("founders.xlsx", "What was George Washington's gpa?", "67", "Feuille1, row", "3 rows"),
    "csv": Case("stanley-cups.csv", "How many Stanley Cups have the Maple Leafs won?", "13", "row", "4 rows"),
    "slides": Case("txt-fit-text.pptx", "What is the art and craft of designing typefaces called?", "type design", "slide 1", "1 slide"),
}


def _content(case: Case) -> bytes:
    return scanned_pdf(SCANNED) if case.filename.endswith(".pdf") else fixture(case.filename)


def _ready(workspace, filename: str) -> Document | None:
    return Document.objects.filter(workspace=workspace, filename=filename, status__in=["ready", "failed"]).first()


def _check_answer(case: Case, claims: list[dict], sources: list[dict]) -> None:
    assert claims, "the question is answered"
    quoting = [claim for claim in claims if case.quoted in claim["quote"]]
    assert quoting, f"no claim quotes {case.quoted!r}: {[c['quote'] for c in claims]}"
    for claim in quoting:
        assert claim["quote_status"] == "located"
        source = next(source for source in sources if source["index"] == claim["source"])
        text = Document.objects.get(pk=source["document_id"]).text  # the quote's offsets are the document's
        assert " ".join(text[claim["start"] : claim["end"]].split()) == " ".join(claim["quote"].split())
        if case.location is None:
            assert source["location"] is None
        else:
            assert source["location"].startswith(case.location)


@pytest.mark.parametrize("kind", CASES, ids=list(CASES))
def test_a_real_file_uploaded_on_the_page_is_answered_with_a_located_quote(kind, personas, celery_worker):
    case = CASES[kind]
    client = personas.client("member")
    response = client.post(reverse("documents", args=["acme"]), {"files": [SimpleUploadedFile(case.filename, _content(case))]})
    assert response.status_code == 302
    document = wait_until(lambda: _ready(personas.workspace_a, case.filename), what="the worker to ingest it", timeout=120)
    assert document.status == "ready", document.error
    listing = client.get(reverse("documents", args=["acme"])).content.decode()
    assert f"<td>{case.contents}</td>" in listing

    response = client.post(reverse("ask", args=["acme"]), {"question": case.question, "mode": "verified"})
    run = wait_until(lambda: QueryRun.objects.filter(workspace=personas.workspace_a, status="done").first(), what="the answer", timeout=120)
    _check_answer(case, run.claims, run.sources)
    page = client.get(response["Location"]).content.decode()
    if case.location:
        assert case.location in page, "the answer page names where the quoted passage sits"


@pytest.mark.parametrize("kind", CASES, ids=list(CASES))
def test_a_real_file_uploaded_through_the_api_is_answered_with_a_located_quote(kind, personas, celery_worker):
    case = CASES[kind]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key('member')}")
    uploaded = api.post(
        reverse("api_documents", args=[personas.workspace_a.pk]),
        {"files": [SimpleUploadedFile(case.filename, _content(case))]},
        format="multipart",
    )
    assert uploaded.status_code == 201, uploaded.content
    document_url = reverse("api_document", args=[personas.workspace_a.pk, uploaded.json()["results"][0]["document"]["id"]])
    wait_until(lambda: api.get(document_url).json()["status"] in ("ready", "failed"), what="the worker to ingest it", timeout=120)
    document = api.get(document_url).json()
    assert document["status"] == "ready", document["error"]
    assert document["contents"] == case.contents

    answer = api.post(
        reverse("api_queries", args=[personas.workspace_a.pk]), {"question": case.question, "mode": "verified"}, format="json"
    )
    assert answer.status_code == 201, answer.content
    _check_answer(case, answer.json()["claims"], answer.json()["sources"])


def test_the_scanned_pdf_keeps_at_least_95_percent_of_the_real_pages_words(personas, celery_worker):
    client = personas.client("member")
    client.post(reverse("documents", args=["acme"]), {"files": [SimpleUploadedFile("scan.pdf", scanned_pdf(SCANNED))]})
    document = wait_until(lambda: _ready(personas.workspace_a, "scan.pdf"), what="the worker to ingest it", timeout=120)
    assert (document.status, document.ocr_page_count, document.locations) == ("ready", 1, [{"unit": "page", "number": 1, "ocr": True}])
    assert recovered_share(original_text(SCANNED), document.text) >= 0.95
    assert (document.progress_unit, document.progress_done) == ("chunks", document.chunk_count), "OCR's page count gave way to the chunks"
