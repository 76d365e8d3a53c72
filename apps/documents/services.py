from __future__ import annotations

import hashlib
import logging
from pathlib import PurePath

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from apps.core.errors import ApplicationError
from apps.documents.models import Chunk, Document, DocumentStatus
from apps.pipeline.embedding import get_embedder
from apps.pipeline.parsing import ParseError, check_supported, extract_text
from apps.pipeline.text import chunk_text
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import settings_get

log = logging.getLogger(__name__)


def document_create(*, workspace: Workspace, actor, filename: str, data: bytes) -> tuple[Document, bool]:
    """Store an upload and queue its ingestion; the same content again returns the existing document."""
    filename = _safe_filename(filename)
    try:
        check_supported(filename)
    except ParseError as exc:
        raise ApplicationError(str(exc), field="files") from None
    if len(data) > settings.UPLOAD_MAX_BYTES:
        raise ApplicationError(
            f"“{filename}” is larger than the {settings.UPLOAD_MAX_BYTES // (1024 * 1024)} MB limit.",
            status=413,
            code="too_large",
            field="files",
        )
    if not data:
        raise ApplicationError(f"“{filename}” is empty.", field="files")
    digest = hashlib.sha256(data).hexdigest()
    with transaction.atomic():
        existing = Document.objects.select_for_update().filter(workspace=workspace, sha256=digest).first()
        if existing is not None:
            return existing, False
        document = Document(
            workspace=workspace,
            title=PurePath(filename).stem[:255],
            filename=filename,
            size_bytes=len(data),
            sha256=digest,
            uploaded_by=actor,
        )
        document.file.save(filename, ContentFile(data), save=False)
        document.save()
        _enqueue_ingest(document)
    return document, True


def document_ingest(*, workspace: Workspace, document_id) -> Document | None:
    """Extract, chunk, embed and index one queued document. Safe to run twice."""
    claimed = Document.objects.filter(workspace=workspace, pk=document_id, status=DocumentStatus.QUEUED).update(
        status=DocumentStatus.PROCESSING, error=""
    )
    if claimed != 1:
        log.info("document %s is not queued; nothing to do", document_id)
        return None
    document = Document.objects.get(workspace=workspace, pk=document_id)
    try:
        text = extract_text(document.filename, _read(document))
    except ParseError as exc:
        return _mark_failed(document, str(exc))
    options = settings_get(workspace=workspace)
    drafts = chunk_text(text, size=options.chunk_size, overlap=options.chunk_overlap)
    vectors = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE).embed([d.text for d in drafts])
    with transaction.atomic():
        Chunk.objects.filter(workspace=workspace, document=document).delete()
        Chunk.objects.bulk_create(
            Chunk(
                workspace=workspace, document=document, ordinal=d.ordinal, text=d.text, start_offset=d.start, end_offset=d.end, embedding=v
            )
            for d, v in zip(drafts, vectors, strict=True)
        )
        document.text = text
        document.chunk_count = len(drafts)
        document.status = DocumentStatus.READY
        document.save(update_fields=["text", "chunk_count", "status", "updated_at"])
    return document


def document_mark_failed(*, workspace: Workspace, document_id, message: str) -> None:
    Document.objects.filter(workspace=workspace, pk=document_id).exclude(status=DocumentStatus.READY).update(
        status=DocumentStatus.FAILED, error=message
    )


def _mark_failed(document: Document, message: str) -> Document:
    document.status = DocumentStatus.FAILED
    document.error = message
    document.save(update_fields=["status", "error", "updated_at"])
    return document


def _enqueue_ingest(document: Document) -> None:
    from apps.documents.tasks import ingest_document

    transaction.on_commit(lambda: ingest_document.delay(str(document.workspace_id), str(document.pk)))


def _read(document: Document) -> bytes:
    with document.file.open("rb") as handle:
        return handle.read()


def _safe_filename(filename: str) -> str:
    """The last path component only, so names like ../../etc/passwd stay inside the workspace folder."""
    name = PurePath(filename.replace("\\", "/")).name.strip().lstrip(".")
    name = "".join(ch for ch in name if ch.isprintable())[:200]
    if not name:
        raise ApplicationError("The file has no usable name.", field="files")
    return name
