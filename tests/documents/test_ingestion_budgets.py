"""What one document may cost to ingest. A CSV of a million columns and a 5,000-point scanned
page, uploaded beside a good file, fail within seconds with a message naming the limit they
passed and how to raise it; the worker stays under 1.5 GB; the good file becomes ready. The
passage cap is a workspace setting, and the worker's memory is watched as each batch ends."""

from __future__ import annotations

import io
import time

import psutil
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from pypdf import PdfWriter

from apps.documents.models import Document
from apps.documents.services import document_create, document_ingest
from apps.workspaces.models import WorkspaceSettings
from tests.conftest import wait_until

GOOD = b"The lighthouse keeper logs the weather at dawn and at dusk, and the logbook is kept in the tower.\n"


def _poster() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=5000, height=5000)  # no text layer: a page for OCR
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _million_columns() -> bytes:
    return ("h," * 1_000_000 + "h\n" + "1," * 1_000_000 + "1\n").encode()


def _settled(workspace, filename: str) -> Document | None:
    return Document.objects.filter(workspace=workspace, filename=filename, status__in=["ready", "failed"]).first()


def _tree_rss(process: psutil.Process) -> int:
    """Resident memory of a process and its children, in bytes."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


@pytest.mark.django_db(transaction=True)
def test_a_million_column_csv_and_a_huge_page_fail_in_seconds_beside_a_good_file(personas, celery_worker):
    worker = psutil.Process(celery_worker.pid)
    client = personas.client("member")
    files = {"wide.csv": _million_columns(), "poster.pdf": _poster(), "logbook.txt": GOOD}
    started = time.monotonic()
    for name, data in files.items():
        client.post(reverse("documents", args=["acme"]), {"files": [SimpleUploadedFile(name, data)]})
    peak = 0

    def all_settled():
        nonlocal peak
        peak = max(peak, _tree_rss(worker))
        return all(_settled(personas.workspace_a, name) for name in files)

    wait_until(all_settled, timeout=120, interval=0.1, what="the three files to settle")
    took = time.monotonic() - started
    wide, poster, good = (_settled(personas.workspace_a, name) for name in files)
    assert (wide.status, poster.status, good.status) == ("failed", "failed", "ready")
    assert "more than 500,000 cells" in wide.error
    assert "Spreadsheet cells per document at most" in wide.error
    assert "over this server's limit of 40 million for one page (OCR_MAX_PAGE_PIXELS)" in poster.error
    assert took < 60, f"{took:.0f} s"
    assert peak < 1.5 * 2**30, f"the worker reached {peak / 2**30:.2f} GB"


@pytest.mark.django_db(transaction=True)
def test_a_document_over_the_workspace_s_passage_cap_fails_naming_the_setting(personas, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    WorkspaceSettings.objects.filter(workspace=personas.workspace_a).update(max_document_chunks=3, chunk_size=200, chunk_overlap=20)
    text = " ".join(f"Sentence {n} of the harbour log records the tide at the north pier." for n in range(40)).encode()
    document, _ = document_create(workspace=personas.workspace_a, actor=personas.member, filename="long.txt", data=text, enqueue=False)
    failed = document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    assert failed.status == "failed"
    assert "more than the 3 this workspace indexes from one document" in failed.error
    assert "Passages per document at most" in failed.error
    assert failed.chunk_count == 0

    WorkspaceSettings.objects.filter(workspace=personas.workspace_a).update(max_document_chunks=100)
    Document.objects.filter(pk=document.pk).update(status="queued")
    assert document_ingest(workspace=personas.workspace_a, document_id=document.pk).status == "ready", "raised, it is indexed"


@pytest.mark.django_db(transaction=True)
def test_an_ingestion_that_takes_the_worker_past_its_memory_limit_stops_with_a_message(personas, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.WORKER_MAX_MEMORY_MB = 1  # this process is past it as the first batch ends
    document, _ = document_create(workspace=personas.workspace_a, actor=personas.member, filename="log.txt", data=GOOD, enqueue=False)
    failed = document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    assert failed.status == "failed"
    assert "over its limit of 1 MB (WORKER_MAX_MEMORY_MB)" in failed.error
    assert failed.chunk_count == 0
