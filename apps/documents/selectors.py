from __future__ import annotations

from dataclasses import replace

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTransform

from apps.audits.selectors import audit_event_list
from apps.documents.models import Chunk, Document, DocumentKind, UnitVectors
from apps.documents.sql import hybrid_search
from apps.pipeline.parsing import Location, describe_span
from apps.pipeline.retrieval import RetrievalParams
from apps.pipeline.text import is_table_row, passage_header, sentence_spans, table_header
from apps.pipeline.types import Candidate
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access


def document_list(*, workspace: Workspace) -> QuerySet[Document]:
    return Document.objects.filter(workspace=workspace).select_related("uploaded_by").defer("text", "locations")


def access_document(workspace: Workspace, document_id) -> Document:
    return access(Document, workspace, document_id)


def chunk_pages_get(*, document_id, chunk_id) -> tuple[int, int] | None:
    """First and last page of a chunk of a paged document (PDF); None for other kinds, which
    have no pages, and for a web result. The ids come from workspace-scoped retrieval."""
    if document_id == "web":
        return None
    found = Chunk.objects.filter(pk=chunk_id, document_id=document_id, document__kind=DocumentKind.PDF)
    return found.values_list("first_page", "last_page").first()


def chunk_location_get(*, document_id, chunk_id) -> str | None:
    """Where a passage sits, as its citation names it: "p. 3, OCR", "Sales, rows 2–5", "slide 4";
    None for kinds without units (Word, HTML, text) and for a web result. Only the two locations
    the passage spans are read from the document's list, which a large sheet makes long. The ids
    come from workspace-scoped retrieval."""
    if document_id == "web":
        return None
    found = Chunk.objects.filter(pk=chunk_id, document_id=document_id).values_list("first_page", "last_page", "document__kind").first()
    if found is None:
        return None
    first, last, kind = found
    ends = (
        Document.objects.filter(pk=document_id)
        .annotate(first=KeyTransform(str(first - 1), "locations"), last=KeyTransform(str(last - 1), "locations"))
        .values_list("first", "last")
        .first()
    )
    if ends and all(isinstance(end, dict) for end in ends):
        return describe_span(Location.from_dict(ends[0]), Location.from_dict(ends[1]))
    # Indexed before locations were kept: a PDF's pages are still its page numbers.
    return describe_span(Location("page", first), Location("page", last)) if kind == DocumentKind.PDF else None


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
    """Whether documents were indexed before the last change of chunk size or overlap and
    the workspace has not been re-indexed since."""
    change = audit_event_list(workspace=workspace, actions=["settings.update"]).filter(data__reindex_needed=True).first()
    if change is None:
        return False
    reindexed = audit_event_list(workspace=workspace, actions=["document.reindex"]).filter(data__all=True, created_at__gt=change.created_at)
    return not reindexed.exists() and document_list(workspace=workspace).filter(created_at__lt=change.created_at).exists()
