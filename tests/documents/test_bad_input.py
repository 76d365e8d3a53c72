"""Malformed files and malformed API payloads: each is a clear 4xx, or a document `failed`
with a message a person can act on — never a server error."""

from __future__ import annotations

import io
import random
import zipfile

import docx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from pypdf import PdfReader, PdfWriter
from rest_framework.test import APIClient

from apps.documents import services as documents
from apps.documents.models import Document, DocumentStatus
from tests.pipeline.test_parsing import _bytes, _pdf_bytes, _rezip, _zip_of_zeros
from tests.pipeline.test_parsing_kinds import _empty_deck, _encrypted_office, _workbook, fixture


def _encrypted_pdf() -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_bytes("pdf/scotus-transcript-p1.pdf"))))
    writer.encrypt("secret")
    return _pdf_bytes(writer)


def _blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    return _pdf_bytes(writer)


def _zip_with(name: str, content: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, content)
    return buffer.getvalue()


def _blank_docx() -> bytes:
    buffer = io.BytesIO()
    docx.Document().save(buffer)
    return buffer.getvalue()


def _half(relative: str) -> bytes:
    return _half_of(_bytes(relative))


def _half_of(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _zip_bomb(main_part: str) -> bytes:
    """An Office file's main part of 10 MB of zeros, stored some thousand times smaller."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, archive.open(main_part, "w") as member:
        for _ in range(10):
            member.write(bytes(1 << 20))
    return buffer.getvalue()


BROKEN_XML = b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p>'

# name → (file name, a function making its bytes)
CORPUS = {
    "empty": ("empty.txt", lambda: b""),
    "executable": ("setup.exe", lambda: b"MZ\x90\x00" + bytes(64)),
    "no usable name": ("...", lambda: b"hello"),
    "nul bytes in text": ("data.txt", lambda: b"name,value\nalpha,\x00\x01\x02\n"),
    "undetectable encoding": ("noise.txt", lambda: bytes(b for b in random.Random(3).randbytes(4000) if b >= 0x80)),
    "whitespace only": ("blank.md", lambda: b" \n\t\r\n  "),
    "pdf named txt": ("report.txt", lambda: _bytes("pdf/scotus-transcript-p1.pdf")),
    "text named pdf": ("notes.pdf", lambda: b"Just some notes, typed in a text editor.\n"),
    "png named pdf": ("scan.pdf", lambda: b"\x89PNG\r\n\x1a\n" + bytes(200)),
    "truncated pdf": ("half.pdf", lambda: _half("pdf/scotus-transcript-p1.pdf")),
    "garbage behind a pdf header": ("garbage.pdf", lambda: b"%PDF-1.7\n" + random.Random(7).randbytes(20_000) + b"\n%%EOF\n"),
    "pdf header only": ("stub.pdf", lambda: b"%PDF-1.4\n"),
    "password-protected pdf": ("locked.pdf", _encrypted_pdf),
    "pdf without a text layer": ("scan2.pdf", _blank_pdf),
    "truncated docx": ("cut.docx", lambda: _half("docx/word_sample.docx")),
    "docx with broken xml": ("broken.docx", lambda: _rezip(_bytes("docx/lorem_ipsum.docx"), {"word/document.xml": BROKEN_XML})),
    "docx missing its body": ("gutted.docx", lambda: _rezip(_bytes("docx/lorem_ipsum.docx"), {"word/document.xml": None})),
    "zip that is not a docx": ("archive.docx", lambda: _zip_with("notes.txt", b"hello")),
    "docx without text": ("blank.docx", _blank_docx),
    "zip bomb": ("dense.docx", lambda: _zip_of_zeros(10, compresslevel=9)),
    "docx named pdf": ("letter.pdf", lambda: _bytes("docx/lorem_ipsum.docx")),
    # the kinds beside PDF and Word: damaged, encrypted, empty, a lying extension, oversized
    "truncated xlsx": ("half.xlsx", lambda: _half_of(fixture("founders.xlsx"))),
    "xlsx with broken xml": ("broken.xlsx", lambda: _rezip(fixture("founders.xlsx"), {"xl/workbook.xml": b"<workbook"})),
    "password-protected xlsx": ("locked.xlsx", _encrypted_office),
    "xlsx without a value": ("blank.xlsx", lambda: _workbook({"Empty": []})),
    "docx named xlsx": ("letter.xlsx", lambda: _bytes("docx/lorem_ipsum.docx")),
    "xlsx zip bomb": ("dense.xlsx", lambda: _zip_bomb("xl/workbook.xml")),
    "csv of empty cells": ("blank.csv", lambda: b",,\n ,\t,\n"),
    "png named csv": ("chart.csv", lambda: b"\x89PNG\r\n\x1a\n" + bytes(200)),
    "csv with a field over the csv limit": ("huge.csv", lambda: b'name,notes\nalpha,"' + b"x" * 200_000 + b'"\n'),
    "truncated pptx": ("half.pptx", lambda: _half_of(fixture("txt-fit-text.pptx"))),
    "pptx missing its presentation part": ("gutted.pptx", lambda: _rezip(fixture("txt-fit-text.pptx"), {"ppt/presentation.xml": None})),
    "password-protected pptx": ("locked.pptx", _encrypted_office),
    "pptx without text": ("blank.pptx", _empty_deck),
    "xlsx named pptx": ("deck.pptx", lambda: fixture("founders.xlsx")),
    "pptx zip bomb": ("dense.pptx", lambda: _zip_bomb("ppt/presentation.xml")),
    "html of only scripts": ("app.html", lambda: b"<html><head><script>render()</script></head><body><div id=app></div></body></html>"),
    "pdf named html": ("page.htm", lambda: _bytes("pdf/scotus-transcript-p1.pdf")),
    "html in an undetectable encoding": (
        "noise.html",
        lambda: b"<html><body>" + bytes(b for b in random.Random(5).randbytes(4000) if b >= 0x80),
    ),
}


def keyed(personas, role: str = "member") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key(role)}")
    return client


def test_the_corpus_holds_at_least_fifteen_malformed_files():
    assert len(CORPUS) >= 15
    assert {name.rsplit(".", 1)[-1] for name, _ in CORPUS.values()} >= {"pdf", "docx", "txt", "xlsx", "csv", "pptx", "html", "htm"}


@pytest.mark.parametrize("case", CORPUS, ids=list(CORPUS))
def test_a_malformed_file_is_refused_or_fails_with_a_message(case, personas, django_capture_on_commit_callbacks):
    filename, make = CORPUS[case]
    url = reverse("api_documents", args=[personas.workspace_a.pk])
    with django_capture_on_commit_callbacks(execute=False):
        response = keyed(personas).post(url, {"files": [SimpleUploadedFile(filename, make())]}, format="multipart")
    assert response.status_code in (201, 400), response.content
    (result,) = response.json()["results"]
    if response.status_code == 400:
        assert len(result["error"]["message"]) > 10
        assert not Document.objects.filter(workspace=personas.workspace_a).exists(), "nothing half-written"
        return
    document = documents.document_ingest(workspace=personas.workspace_a, document_id=result["document"]["id"])
    assert document.status == DocumentStatus.FAILED
    assert f"“{filename}”" in document.error, "the message names the file"
    assert document.chunk_count == 0


DEEP = "[" * 100_000 + "]" * 100_000

# (name, raw JSON body) → the statuses it may answer
QUESTIONS = {
    "question is a number (refused, not read as its text)": ('{"question": 42}', {400}),
    "question is a list": ('{"question": ["a", "b"]}', {400}),
    "question is an object": ('{"question": {"$ne": null}}', {400}),
    "question is null": ('{"question": null}', {400}),
    "question is true": ('{"question": true}', {400}),
    "body is a list": ('["question"]', {400}),
    "body is a string": ('"question"', {400}),
    "body is a number": ("123", {400}),
    "empty body": ("", {400}),
    "huge question": ('{"question": "' + "why " * 750_000 + '"}', {400, 413}),
    "question over the limit": ('{"question": "' + "x" * 3000 + '"}', {400}),
    "deeply nested json": (DEEP, {400}),
    "nested question": ('{"question": ' + "[" * 5000 + "]" * 5000 + "}", {400}),
    "nul byte": ('{"question": "What\\u0000is this?"}', {400}),
    "lone surrogate": ('{"question": "What \\ud800 is this?"}', {400}),
    "lone low surrogate in a key": ('{"\\udc00": "x", "question": "fine?"}', {400}),
    "bell and escape": ('{"question": "Ring \\u0007 the \\u001b[31m bell?"}', {400}),
    "threshold is text": ('{"question": "ok?", "threshold_override": "high"}', {400}),
    "threshold out of range": ('{"question": "ok?", "threshold_override": 7}', {400}),
    "threshold NaN": ('{"question": "ok?", "threshold_override": NaN}', {400}),
    "threshold Infinity": ('{"question": "ok?", "threshold_override": Infinity}', {400}),
    "mode unknown": ('{"question": "ok?", "mode": "<script>"}', {400}),
    "async is text": ('{"question": "ok?", "async": "maybe"}', {400}),
    "right-to-left override": ('{"question": "Who \\u202egnp.exe\\u202c wrote this?"}', {201}),
    "zero-width and combining marks": ('{"question": "Wh\\u200bo wro\\u0301te this\\ufeff?"}', {201}),
    "emoji and astral plane": ('{"question": "Which \\ud83d\\udd25 report mentions fire?"}', {201}),
}


@pytest.mark.parametrize("case", QUESTIONS, ids=list(QUESTIONS))
def test_a_malformed_question_is_a_clear_4xx(case, personas):
    body, allowed = QUESTIONS[case]
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    response = keyed(personas).generic("POST", url, body.encode(), content_type="application/json")
    assert response.status_code in allowed, response.content[:500]
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["code"] in {"invalid", "parse_error", "too_large"}
        assert error["message"]
    else:
        assert response.json()["status"] == "done"


OTHER = {
    "settings: threshold is text": ("api_settings", "PATCH", '{"gate_threshold": "high"}'),
    "settings: threshold is a list": ("api_settings", "PATCH", '{"gate_threshold": [0.5]}'),
    "settings: chunk size overflows": ("api_settings", "PATCH", '{"chunk_size": 1e308}'),
    "settings: threshold NaN": ("api_settings", "PATCH", '{"gate_threshold": NaN}'),
    "settings: deep json": ("api_settings", "PATCH", DEEP),
    "api key: nul in the name": ("api_keys", "POST", '{"name": "ci\\u0000", "role": "member"}'),
    "api key: owner role": ("api_keys", "POST", '{"name": "ci", "role": "owner"}'),
    "api key: lone surrogate": ("api_keys", "POST", '{"name": "\\ud800", "role": "member"}'),
    "api key: huge name": ("api_keys", "POST", '{"name": "' + "k" * 100_000 + '", "role": "member"}'),
    "members: identifier is an object": ("api_members", "POST", '{"identifier": {"a": 1}, "role": "member"}'),
}


@pytest.mark.parametrize("case", OTHER, ids=list(OTHER))
def test_malformed_payloads_elsewhere_are_a_clear_4xx(case, personas):
    name, method, body = OTHER[case]
    url = reverse(name, args=[personas.workspace_a.pk])
    response = keyed(personas, "admin").generic(method, url, body.encode(), content_type="application/json")
    assert 400 <= response.status_code < 500, response.content[:500]
    assert response.json()["error"]["message"]


def test_a_workspace_name_holding_a_nul_or_a_surrogate_is_refused(personas):
    client = personas.client("owner")
    for body in ('{"name": "Acme\\u0000"}', '{"name": "\\udfff"}', '{"name": ' + "[" * 50_000 + "]" * 50_000 + "}"):
        response = client.generic("POST", reverse("api_workspaces"), body.encode(), content_type="application/json")
        assert response.status_code == 400, response.content[:300]
