from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Case, Count, F, Func, JSONField, Min, Q, QuerySet, Sum, Value, When
from django.utils import timezone

from apps.documents.models import SETTLED_STATUSES, Chunk, Document, DocumentKind, DocumentStatus, UnitVectors
from apps.documents.sql import hybrid_search
from apps.pipeline.embedding import product_embedder
from apps.pipeline.parsing import Location, describe_span
from apps.pipeline.retrieval import RetrievalParams
from apps.pipeline.text import is_table_row, passage_header, sentence_spans, table_header
from apps.pipeline.types import Candidate
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import settings_get
from apps.workspaces.tenancy import access


def document_list(*, workspace: Workspace) -> QuerySet[Document]:
    return Document.objects.filter(workspace=workspace).select_related("uploaded_by").defer("text", "locations")


@dataclass(frozen=True)
class BatchProgress:
    """One upload of several files, as it is ingested: files settled (ready or failed), chunks
    indexed so far, and the time left at the pace so far (by the bytes settled; None until a
    file has settled)."""

    batch: uuid.UUID
    files: int
    ready: int
    failed: int
    chunks_done: int
    started_at: datetime
    seconds_elapsed: float
    seconds_left: float | None

    @property
    def settled(self) -> int:
        return self.ready + self.failed

    @property
    def running(self) -> bool:
        return self.settled < self.files

    @property
    def time_left(self) -> str:
        """ "about 40 s left", "about 3 min left"; empty until a file has settled."""
        if self.seconds_left is None:
            return ""
        seconds = round(self.seconds_left)
        return f"about {seconds} s left" if seconds < 90 else f"about {round(seconds / 60)} min left"


def upload_batch_progress(*, workspace: Workspace, batch=None, now=None) -> list[BatchProgress]:
    """The progress of one upload batch of the workspace (`batch`; an empty list when it has no
    documents here), or of every batch still being ingested, oldest first; one query."""
    now = now or timezone.now()
    documents = Document.objects.filter(workspace=workspace, batch__isnull=False)
    if batch is not None:
        documents = documents.filter(batch=batch)
    else:
        running = Document.objects.filter(workspace=workspace, batch__isnull=False).exclude(status__in=SETTLED_STATUSES)
        documents = documents.filter(batch__in=running.values("batch"))
    rows = (
        documents.values("batch")
        .annotate(
            files=Count("pk"),
            ready=Count("pk", filter=Q(status=DocumentStatus.READY)),
            failed=Count("pk", filter=Q(status=DocumentStatus.FAILED)),
            chunks_done=Sum(
                Case(
                    When(status=DocumentStatus.READY, then=F("chunk_count")),
                    When(status=DocumentStatus.PROCESSING, progress_unit="chunks", then=F("progress_done")),
                    default=Value(0),
                )
            ),
            size=Sum("size_bytes"),
            size_settled=Sum("size_bytes", filter=Q(status__in=SETTLED_STATUSES), default=0),
            started_at=Min("created_at"),
        )
        .order_by("started_at")
    )
    found = []
    for row in rows:
        elapsed = max(0.0, (now - row["started_at"]).total_seconds())
        left = None
        if row["size_settled"]:
            left = elapsed * (row["size"] - row["size_settled"]) / row["size_settled"]
        found.append(
            BatchProgress(
                row["batch"], row["files"], row["ready"], row["failed"], row["chunks_done"] or 0, row["started_at"], elapsed, left
            )
        )
    return found


def access_document(workspace: Workspace, document_id) -> Document:
    return access(Document, workspace, document_id)


class _Element(Func):
    """The element of a jsonb array at an index computed per row: `array -> (index)`."""

    arg_joiner = " -> "
    template = "(%(expressions)s)"
    output_field = JSONField()


def chunk_citations_get(*, workspace: Workspace, chunk_ids) -> dict[str, dict]:
    """How each passage is cited, in one query for all of an answer's sources: its first and
    last page when its document is paged (PDF; None otherwise) and where it sits as its citation
    names it — "p. 3, OCR", "Sales, rows 2–5", "slide 4"; None for kinds without units (Word,
    HTML, text), and its document's content hash (the same file uploaded again is the same source).
    Only the two locations a passage spans are read from its document's list, which a large sheet
    makes long. Keyed by chunk id (as a string); ids outside the workspace are absent."""
    rows = (
        Chunk.objects.filter(document__workspace=workspace, pk__in=list(chunk_ids))
        .annotate(
            kind=F("document__kind"),
            sha256=F("document__sha256"),
            first_at=_Element(F("document__locations"), F("first_page") - 1),
            last_at=_Element(F("document__locations"), F("last_page") - 1),
        )
        .values_list("pk", "first_page", "last_page", "kind", "first_at", "last_at", "sha256")
    )
    return {
        str(pk): _citation(first, last, kind, first_at, last_at) | {"sha256": sha256}
        for pk, first, last, kind, first_at, last_at, sha256 in rows
    }


def _citation(first: int, last: int, kind: str, first_at, last_at) -> dict:
    paged = kind == DocumentKind.PDF
    if isinstance(first_at, dict) and isinstance(last_at, dict):
        location = describe_span(Location.from_dict(first_at), Location.from_dict(last_at))
    else:  # indexed before locations were kept: a PDF's pages are still its page numbers
        location = describe_span(Location("page", first), Location("page", last)) if paged else None
    return {"first_page": first if paged else None, "last_page": last if paged else None, "location": location}


def document_file_names(*, workspace: Workspace) -> list[str]:
    return [name for name in Document.objects.filter(workspace=workspace).values_list("file", flat=True) if name]


def chunk_search(*, workspace: Workspace, question: str, query_vector, params: RetrievalParams) -> list[Candidate]:
    """The workspace's passages for a question: the one hybrid statement (dense HNSW + BM25,
    fused by weighted RRF), both legs filtered by the workspace."""
    with transaction.atomic(), connection.cursor() as cursor:
        found = hybrid_search(cursor, workspace_id=workspace.pk, question=question, query_vector=query_vector, params=params)
    return _with_table_headers(workspace, found)


def _with_table_headers(workspace: Workspace, candidates: list[Candidate]) -> list[Candidate]:
    """Each passage with what it is read by: its units' vectors stored at ingestion, and, when it
    opens inside a table whose heading line is in an earlier passage, that heading (from the
    document's text: a row is read under its table's heading)."""
    if not candidates:
        return candidates
    stored = _unit_vectors(workspace, [c for c in candidates if c.url is None])
    headless = {c.chunk_id for c in candidates if _opens_in_a_table(c.text)}
    texts = {}
    if headless:
        documents = {c.document_id for c in candidates if c.chunk_id in headless}
        found = Document.objects.filter(workspace=workspace, pk__in=documents).values_list("id", "text")
        texts = {str(pk): text for pk, text in found}

    def read_by(c: Candidate) -> Candidate:
        header = passage_header(c.text, c.start, texts[c.document_id]) if c.chunk_id in headless and c.document_id in texts else None
        return replace(c, table_header=header, unit_vectors=stored.get((c.document_id, c.ordinal)))

    return [read_by(c) for c in candidates]


def _unit_vectors(workspace: Workspace, candidates: list[Candidate]) -> dict[tuple[str, int], bytes]:
    """(document id, ordinal) → the chunk's stored unit vectors, for these passages, in one query."""
    if not candidates:
        return {}
    wanted = Q()
    for c in candidates:
        wanted |= Q(document_id=c.document_id, ordinal=c.ordinal)
    found = UnitVectors.objects.filter(wanted, workspace=workspace).values_list("document_id", "ordinal", "vectors")
    return {(str(document), ordinal): bytes(vectors) for document, ordinal, vectors in found}


def _opens_in_a_table(text: str) -> bool:
    first = next(iter(sentence_spans(text)), None)
    return first is not None and is_table_row(text[first.start : first.end]) and table_header(text, first.start) is None


def documents_reindex_pending(*, workspace: Workspace) -> bool:
    """Whether an indexed document was cut with another chunk size or overlap than the
    workspace's settings now say (or with one not known), or embedded by another embedder than
    the product's now (EMBEDDING_BACKEND, EMBEDDING_MODEL): a re-index would cut and embed it anew,
    so that the workspace's index holds the vectors of one embedder only."""
    options = settings_get(workspace=workspace)
    current = Q(indexed_chunk_size=options.chunk_size, indexed_chunk_overlap=options.chunk_overlap) & current_embedder()
    return Document.objects.filter(workspace=workspace, status=DocumentStatus.READY).exclude(current).exists()


def documents_embedded_otherwise() -> QuerySet[Document]:
    """Indexed documents, of every workspace, whose vectors came from another embedder than the
    product's now: what `manage.py reembed` re-indexes."""
    return Document.objects.filter(status=DocumentStatus.READY).exclude(current_embedder()).select_related("workspace")


def current_embedder() -> Q:
    """Documents whose vectors the product's embedder wrote; those indexed before the embedder was
    recorded hold fp32 vectors (torch was the only backend), which an fp32 embedder writes too."""
    identity = product_embedder().identity
    written = Q(indexed_embedder=identity)
    return written | Q(indexed_embedder="") if identity.endswith(":fp32") else written
