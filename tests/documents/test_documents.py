"""Document lifecycle: claim and lease, progress, delete, re-index, the reaper."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse
from django.utils import timezone

from apps.audits.models import AuditEvent
from apps.documents import services
from apps.documents.models import Chunk, Document, DocumentStatus

TEXT = " ".join(f"Fact number {i} says the river rises by {i} centimetres in spring." for i in range(40))


@pytest.fixture
def queued(personas, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        document, _ = services.document_create(
            workspace=personas.workspace_a, actor=personas.member, filename="river.txt", data=TEXT.encode()
        )
    return document


def ingest(document) -> Document:
    services.document_ingest(workspace=document.workspace, document_id=document.pk)
    document.refresh_from_db()
    return document


def test_ingestion_records_pages_offsets_and_finished_progress(queued):
    document = ingest(queued)
    assert document.status == DocumentStatus.READY
    assert document.kind == "text"
    assert document.page_count == 1
    chunks = list(Chunk.objects.filter(document=document).order_by("ordinal"))
    assert document.chunk_count == len(chunks) > 1
    assert (document.progress_done, document.progress_total) == (len(chunks), len(chunks))
    assert all(document.text[c.start_offset : c.end_offset] == c.text for c in chunks)
    assert all((c.first_page, c.last_page) == (1, 1) for c in chunks)
    assert document.attempts == 1


def test_a_second_run_replaces_the_chunks_instead_of_adding_to_them(queued, personas, django_capture_on_commit_callbacks):
    document = ingest(queued)
    first = list(Chunk.objects.filter(document=document).order_by("ordinal").values_list("ordinal", "text"))
    with django_capture_on_commit_callbacks(execute=False):
        services.document_reindex(workspace=personas.workspace_a, actor=personas.member, document_id=document.pk)
    document = ingest(document)
    assert list(Chunk.objects.filter(document=document).order_by("ordinal").values_list("ordinal", "text")) == first
    assert document.chunk_count == len(first)


def test_a_document_held_by_a_live_worker_is_not_claimed_twice(queued):
    Document.objects.filter(pk=queued.pk).update(status=DocumentStatus.PROCESSING, heartbeat_at=timezone.now())
    assert services.document_ingest(workspace=queued.workspace, document_id=queued.pk) is None
    assert not Chunk.objects.filter(document=queued).exists()


def test_a_claim_whose_worker_stopped_beating_is_taken_over(queued, settings):
    lapsed = timezone.now() - timedelta(seconds=settings.INGEST_LEASE_S + 5)
    Document.objects.filter(pk=queued.pk).update(status=DocumentStatus.PROCESSING, heartbeat_at=lapsed, attempts=1)
    document = ingest(queued)
    assert document.status == DocumentStatus.READY
    assert document.attempts == 2


def test_a_settled_document_is_left_alone_by_a_duplicate_message(queued):
    document = ingest(queued)
    assert services.document_ingest(workspace=document.workspace, document_id=document.pk) is None
    document.refresh_from_db()
    assert document.attempts == 1


def test_the_reaper_requeues_stuck_and_forgotten_documents_and_fails_exhausted_ones(personas, settings, django_capture_on_commit_callbacks):
    now = timezone.now()
    lapsed = now - timedelta(seconds=settings.INGEST_LEASE_S + 1)
    old = now - timedelta(seconds=settings.INGEST_REQUEUE_QUEUED_AFTER_S + 1)
    with django_capture_on_commit_callbacks(execute=False):
        docs = [
            services.document_create(workspace=personas.workspace_a, actor=None, filename=f"d{i}.txt", data=f"Doc {i}.".encode())[0]
            for i in range(4)
        ]
    Document.objects.filter(pk=docs[0].pk).update(status=DocumentStatus.PROCESSING, heartbeat_at=lapsed, attempts=1)
    Document.objects.filter(pk=docs[1].pk).update(
        status=DocumentStatus.PROCESSING, heartbeat_at=lapsed, attempts=settings.INGEST_MAX_ATTEMPTS
    )
    Document.objects.filter(pk=docs[2].pk).update(updated_at=old)
    Document.objects.filter(pk=docs[3].pk).update(status=DocumentStatus.PROCESSING, heartbeat_at=now)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        outcome = services.documents_reap_stuck(now=now)
    assert outcome == {"requeued": 2, "failed": 1}
    assert len(callbacks) == 2
    statuses = {d.filename: d for d in Document.objects.all()}
    assert statuses["d0.txt"].status == DocumentStatus.QUEUED
    assert statuses["d1.txt"].status == DocumentStatus.FAILED
    assert "re-index" in statuses["d1.txt"].error
    assert statuses["d2.txt"].status == DocumentStatus.QUEUED
    assert statuses["d3.txt"].status == DocumentStatus.PROCESSING


def test_member_deletes_a_document_with_its_chunks_and_file(queued, personas):
    document = ingest(queued)
    name = document.file.name
    assert default_storage.exists(name)
    response = personas.client("member").post(reverse("document_delete", args=["acme", document.pk]))
    assert response.status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="document.delete")
    assert event.data["filename"] == "river.txt"


def test_the_file_goes_when_the_deletion_commits(personas, django_capture_on_commit_callbacks):
    document, _ = services.document_create(
        workspace=personas.workspace_a, actor=None, filename="gone.txt", data=b"Soon gone.", enqueue=False
    )
    name = document.file.name
    with django_capture_on_commit_callbacks(execute=True):
        services.document_delete(workspace=personas.workspace_a, actor=None, document_id=document.pk)
    assert not default_storage.exists(name)


def test_reindex_all_is_for_admins_and_queues_every_settled_document(queued, personas, django_capture_on_commit_callbacks):
    ingest(queued)
    assert personas.client("member").post(reverse("documents_reindex_all", args=["acme"])).status_code == 403
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = personas.client("admin").post(reverse("documents_reindex_all", args=["acme"]))
    assert response.status_code == 302
    assert len(callbacks) == 1
    queued.refresh_from_db()
    assert queued.status == DocumentStatus.QUEUED
    assert (queued.progress_done, queued.progress_total) == (0, 0)
    assert AuditEvent.objects.filter(action="document.reindex").exists()


def test_api_deletes_and_reindexes(queued, personas, django_capture_on_commit_callbacks):
    ingest(queued)
    client = personas.client("member")
    with django_capture_on_commit_callbacks(execute=False):
        reindex = client.post(reverse("api_document_reindex", args=[personas.workspace_a.pk, queued.pk]))
    assert reindex.status_code == 202
    assert reindex.json() == {"queued": 1}
    assert client.delete(reverse("api_document", args=[personas.workspace_a.pk, queued.pk])).status_code == 204
    assert client.get(reverse("api_document", args=[personas.workspace_a.pk, queued.pk])).status_code == 404


def test_documents_page_shows_progress_while_ingesting_and_stops_polling_when_settled(queued, personas):
    Document.objects.filter(pk=queued.pk).update(
        status=DocumentStatus.PROCESSING, progress_done=4, progress_total=10, heartbeat_at=timezone.now()
    )
    client = personas.client("viewer")
    page = client.get(reverse("documents", args=["acme"])).content.decode()
    assert 'hx-trigger="every 2s"' in page
    assert '<progress max="10" value="4"' in page
    assert "4 / 10 chunks" in page
    fragment = client.get(reverse("documents", args=["acme"]), HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="document-table"')
    assert "<html" not in fragment
    Document.objects.filter(pk=queued.pk).update(status=DocumentStatus.READY, page_count=1, chunk_count=10)
    settled = client.get(reverse("documents", args=["acme"]), HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in settled
    assert "<progress" not in settled


def test_a_file_over_the_limit_is_refused_before_it_is_read(personas, settings):
    settings.UPLOAD_MAX_BYTES = 1024
    big = ContentFile(b"a" * 2048, name="big.txt")
    response = personas.client("member").post(reverse("documents", args=["acme"]), {"files": [big]})
    assert response.status_code == 413
    assert "larger than the 1024 bytes limit" in response.content.decode()
    api = personas.client("member").post(
        reverse("api_documents", args=[personas.workspace_a.pk]), {"files": [ContentFile(b"a" * 2048, name="big.txt")]}
    )
    assert api.status_code == 413
    assert api.json()["results"][0]["error"]["code"] == "too_large"
    assert not Document.objects.exists()
