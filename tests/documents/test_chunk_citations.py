"""How an answer's sources are cited is read in one query for all of them, within the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.documents import services as documents
from apps.documents.models import Chunk, Document
from apps.documents.selectors import chunk_citations_get

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "documents"


def _ingest(workspace, filename: str, data: bytes) -> list[Chunk]:
    document, _ = documents.document_create(workspace=workspace, actor=None, filename=filename, data=data, enqueue=False)
    documents.document_ingest(workspace=workspace, document_id=document.pk)
    return list(Chunk.objects.filter(document=document).order_by("ordinal"))


def test_sources_of_a_sheet_and_of_a_text_are_cited_in_one_query_and_only_in_their_workspace(personas, django_assert_num_queries):
    rows = _ingest(personas.workspace_a, "stanley-cups.csv", (FIXTURES / "stanley-cups.csv").read_bytes())
    text = _ingest(personas.workspace_a, "notes.txt", b"The harbour light was lit in 1844. It still turns every night.")
    ids = [c.pk for c in [*rows, *text]]

    with django_assert_num_queries(1):
        cited = chunk_citations_get(workspace=personas.workspace_a, chunk_ids=ids)

    first = cited[str(rows[0].pk)]
    assert (first["first_page"], first["last_page"]) == (None, None), "a sheet has no pages"
    assert first["location"].startswith("row"), first
    notes = Document.objects.get(workspace=personas.workspace_a, filename="notes.txt")
    assert cited[str(text[0].pk)] == {"first_page": None, "last_page": None, "location": None, "sha256": notes.sha256}, (
        "a text has no units"
    )
    assert chunk_citations_get(workspace=personas.workspace_b, chunk_ids=ids) == {}, "another workspace's passages are not read"
