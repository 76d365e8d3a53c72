from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePath

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.broker import send_on_commit
from apps.core.errors import ApplicationError
from apps.core.events import event_record
from apps.core.guard import safe_filename

# Ingestion lives in apps/documents/ingestion.py; its entry points are services too.
from apps.documents.ingestion import ChunkWrite as ChunkWrite
from apps.documents.ingestion import document_chunks_write as document_chunks_write
from apps.documents.ingestion import document_chunks_write_many as document_chunks_write_many
from apps.documents.ingestion import document_ingest as document_ingest
from apps.documents.ingestion import document_mark_failed as document_mark_failed
from apps.documents.ingestion import documents_ingest_many as documents_ingest_many
from apps.documents.models import SETTLED_STATUSES, Document, DocumentStatus
from apps.documents.signals import document_text_changed
from apps.documents.sql import unindex_document, vector_index_drop
from apps.pipeline.parsing import ParseError, check_supported
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access, require

log = logging.getLogger(__name__)


def document_create_from_upload(*, workspace: Workspace, actor, upload, enqueue: bool = True, batch=None) -> tuple[Document, bool]:
    """An uploaded file, checked against the size limit before it is read into memory."""
    if upload.size > settings.UPLOAD_MAX_BYTES:
        raise _too_large(safe_filename(upload.name))
    return document_create(workspace=workspace, actor=actor, filename=upload.name, data=upload.read(), enqueue=enqueue, batch=batch)


@dataclass(frozen=True)
class Uploaded:
    """One file of a multi-file upload: its document (and whether it is new) or why it was refused."""

    name: str
    document: Document | None = None
    created: bool = False
    error: ApplicationError | None = None


def documents_upload(*, workspace: Workspace, actor, uploads: Sequence) -> tuple[uuid.UUID | None, list[Uploaded]]:
    """Files sent together (the Documents page, the API). Each stands alone: one refused is
    reported and the others still go in. Those added share one batch id and are ingested by one
    task as one embedding stream (documents_ingest_many), each searchable as soon as its own
    chunks are written; the batch's progress is one figure on the page and in the API
    (selectors.upload_batch_progress). Returns the batch id (None when nothing was added) and one
    outcome per file, in order."""
    require(actor, "contribute", workspace=workspace)
    batch = uuid.uuid4()
    outcomes: list[Uploaded] = []
    for upload in uploads:
        try:
            document, created = document_create_from_upload(workspace=workspace, actor=actor, upload=upload, enqueue=False, batch=batch)
        except ApplicationError as exc:
            outcomes.append(Uploaded(upload.name, error=exc))
            continue
        outcomes.append(Uploaded(upload.name, document, created))
    added = [o.document.pk for o in outcomes if o.created]
    if added:
        _enqueue_ingest_batch(workspace.pk, added)
    return (batch if added else None), outcomes


def document_create(
    *, workspace: Workspace, actor, filename: str, data: bytes, enqueue: bool = True, title: str = "", batch=None
) -> tuple[Document, bool]:
    """Store an upload and queue its ingestion; the same content again returns the existing document.
    `title`: what citations name it by (an imported article's title); the file's name by default.
    `batch`: the id of the upload it came in with (documents_upload)."""
    require(actor, "contribute", workspace=workspace)
    filename = safe_filename(filename)
    try:
        check_supported(filename)
    except ParseError as exc:
        raise ApplicationError(str(exc), code="unsupported_type", field="files") from None
    if len(data) > settings.UPLOAD_MAX_BYTES:
        raise _too_large(filename)
    if not data:
        raise ApplicationError(f"“{filename}” is empty.", code="empty", field="files")
    digest = hashlib.sha256(data).hexdigest()
    stored = None
    try:
        with transaction.atomic():
            # Uploads of one content in parallel wait for each other here: the first stores the
            # file and its row, the others then find that row (a row lock cannot do this, as
            # there is no row to lock until the first commits).
            _content_lock(workspace, digest)
            existing = Document.objects.filter(workspace=workspace, sha256=digest).first()
            if existing is not None:
                return existing, False
            document = Document(
                workspace=workspace,
                title=(title or PurePath(filename).stem)[:255],
                filename=filename,
                size_bytes=len(data),
                sha256=digest,
                uploaded_by=actor.user if actor is not None else None,
                batch=batch,
            )
            document.file.save(filename, ContentFile(data), save=False)
            stored = document.file.name
            document.save()
            event_record(
                workspace=workspace,
                actor=actor,
                action="document.upload",
                data={"document": str(document.pk), "filename": filename, "size_bytes": len(data), "sha256": digest},
            )
            if enqueue:
                _enqueue_ingest(document)
    except BaseException:
        if stored:  # the row was not written: no file without its document
            document.file.storage.delete(stored)
        raise
    return document, True


def document_replace(*, workspace: Workspace, actor, document_id, data: bytes) -> Document:
    """New content for a document that keeps its identity (an imported page or article that
    changed at its origin): the file is replaced and the document queued for ingestion again; once
    indexed, answers citing it notice the change as after any re-index (`document_text_changed`)."""
    require(actor, "contribute", workspace=workspace)
    digest = hashlib.sha256(data).hexdigest()
    with transaction.atomic():
        _content_lock(workspace, digest)
        document = access(Document, workspace, document_id, Document.objects.select_for_update())
        if Document.objects.filter(workspace=workspace, sha256=digest).exclude(pk=document.pk).exists():
            raise ApplicationError(f"The new content of “{document.filename}” is already in the workspace as another document.")
        old = document.file.name
        document.file.save(document.filename, ContentFile(data), save=False)
        Document.objects.filter(pk=document.pk).update(
            file=document.file.name, sha256=digest, size_bytes=len(data), status=DocumentStatus.QUEUED, error="",
            progress_done=0, progress_total=0, attempts=0, updated_at=timezone.now(),
        )  # fmt: skip
        event_record(workspace=workspace, actor=actor, action="document.replace", data={"document": str(document.pk), "sha256": digest})
        _enqueue_ingest(document)
        transaction.on_commit(lambda: document.file.storage.delete(old) if old and old != document.file.name else None)
    document.refresh_from_db()
    return document


def _content_lock(workspace: Workspace, digest: str) -> None:
    """A transaction-scoped Postgres advisory lock on (workspace, content)."""
    key = int.from_bytes(hashlib.sha256(f"{workspace.pk}:{digest}".encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def document_delete(*, workspace: Workspace, actor, document_id) -> None:
    require(actor, "contribute", workspace=workspace)
    with transaction.atomic():
        document = access(Document, workspace, document_id, Document.objects.select_for_update())
        storage, name = document.file.storage, document.file.name
        with connection.cursor() as cursor:
            unindex_document(cursor, workspace_id=workspace.pk, document_id=document.pk)
        document.delete()
        document_text_changed.send(sender=Document, workspace=workspace, document_id=document_id)
        event_record(
            workspace=workspace,
            actor=actor,
            action="document.delete",
            data={"document": str(document_id), "filename": document.filename, "sha256": document.sha256},
        )
        transaction.on_commit(lambda: storage.delete(name) if name else None)


def workspace_vector_index_drop(*, workspace_id) -> None:
    """Drop a deleted workspace's HNSW index, last in the deleting transaction (dropping an index
    locks its table until the commit); `workspace_delete` announces it (`workspace_deleted`)."""
    with connection.cursor() as cursor:
        vector_index_drop(cursor, workspace_id=workspace_id)


def document_reindex(*, workspace: Workspace, actor, document_id=None) -> int:
    """Queue one document, or every settled document of the workspace, for ingestion again.

    Chunks stay searchable until the new ones replace them in one transaction. `actor` None is
    the operator at the shell.
    """
    require(actor, "contribute" if document_id is not None else "reindex_all", workspace=workspace)
    documents = Document.objects.filter(workspace=workspace, status__in=SETTLED_STATUSES)
    if document_id is not None:
        documents = documents.filter(pk=access(Document, workspace, document_id).pk)
    with transaction.atomic():
        ids = list(documents.select_for_update().values_list("pk", flat=True))
        Document.objects.filter(pk__in=ids).update(
            status=DocumentStatus.QUEUED, error="", progress_done=0, progress_total=0, attempts=0, updated_at=timezone.now()
        )
        event_record(
            workspace=workspace,
            actor=actor,
            action="document.reindex",
            data={"documents": [str(i) for i in ids], "all": document_id is None},
        )
        for pk in ids:
            _enqueue_ingest_id(workspace.pk, pk)
    return len(ids)


def documents_reap_stuck(*, now=None) -> dict[str, int]:
    """Requeue documents whose worker died (heartbeat past the lease) or whose
    message was lost (queued for long); fail those out of attempts. All workspaces:
    this runs from the scheduler, and touches each row only through its own fields."""
    now = now or timezone.now()
    stale = Q(status=DocumentStatus.PROCESSING, heartbeat_at__lt=now - timedelta(seconds=settings.INGEST_LEASE_S))
    exhausted = Document.objects.filter(stale, attempts__gte=settings.INGEST_MAX_ATTEMPTS)
    failed = exhausted.update(
        status=DocumentStatus.FAILED,
        error=f"Ingestion stopped {settings.INGEST_MAX_ATTEMPTS} times without finishing; re-index the document to try again.",
    )
    forgotten = Q(status=DocumentStatus.QUEUED, updated_at__lt=now - timedelta(seconds=settings.INGEST_REQUEUE_QUEUED_AFTER_S))
    requeued = 0
    for workspace_id, pk in Document.objects.filter(stale | forgotten).values_list("workspace_id", "pk"):
        requeued += Document.objects.filter(pk=pk).update(status=DocumentStatus.QUEUED, updated_at=now)
        _enqueue_ingest_id(workspace_id, pk)
    return {"requeued": requeued, "failed": failed}


def _enqueue_ingest(document: Document) -> None:
    _enqueue_ingest_id(document.workspace_id, document.pk)


def _enqueue_ingest_id(workspace_id, document_id) -> None:
    from apps.documents.tasks import ingest_document

    send_on_commit(ingest_document, str(workspace_id), str(document_id))


def documents_enqueue_batch(*, workspace: Workspace, document_ids: Sequence) -> None:
    """Queue documents already stored (queued, not yet sent) for the worker as one batch."""
    _enqueue_ingest_batch(workspace.pk, document_ids)


def _enqueue_ingest_batch(workspace_id, document_ids: Sequence) -> None:
    from apps.documents.tasks import ingest_documents

    send_on_commit(ingest_documents, str(workspace_id), [str(pk) for pk in document_ids])


def documents_ingest_interrupted(*, workspace: Workspace, document_ids: Sequence, message: str) -> int:
    """After a batch ingestion stopped on an error: the documents it held fail with `message`, and
    those it had not reached yet are queued again as a batch of their own. Returns how many."""
    Document.objects.filter(workspace=workspace, pk__in=document_ids, status=DocumentStatus.PROCESSING).update(
        status=DocumentStatus.FAILED, error=message, updated_at=timezone.now()
    )
    waiting = list(
        Document.objects.filter(workspace=workspace, pk__in=document_ids, status=DocumentStatus.QUEUED).values_list("pk", flat=True)
    )
    if waiting:
        _enqueue_ingest_batch(workspace.pk, waiting)
    return len(waiting)


def _too_large(filename: str) -> ApplicationError:
    limit = settings.UPLOAD_MAX_BYTES
    shown = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
    return ApplicationError(f"“{filename}” is larger than the {shown} limit.", status=413, code="too_large", field="files")
