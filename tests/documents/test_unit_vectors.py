"""Unit vectors stored at ingestion: each chunk's sentences and table rows are embedded once, and
an answer then embeds its question and nothing of its passages."""

from __future__ import annotations

import numpy as np
from django.conf import settings

from apps.documents import services as documents
from apps.documents.models import Chunk, UnitVectors
from apps.pipeline.embedding import DIMENSIONS, get_embedder, unpack_vectors
from apps.pipeline.text import passage_header, unit_reads
from apps.queries.services import query_answer
from tests.queries.test_generation import LIGHTHOUSE

QUESTION = "When was the Skerryvore lighthouse built?"


def ingest(personas, name: str, text: str):
    document, _ = documents.document_create(workspace=personas.workspace_a, actor=None, filename=name, data=text.encode(), enqueue=False)
    return documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)


def test_each_chunk_keeps_one_vector_per_unit_as_embedded(personas):
    document = ingest(personas, "skerryvore.txt", LIGHTHOUSE)
    for chunk in Chunk.objects.filter(document=document):
        stored = unpack_vectors(UnitVectors.objects.get(document=document, ordinal=chunk.ordinal).vectors)
        reads = unit_reads(chunk.text, passage_header(chunk.text, chunk.start_offset, document.text))
        assert stored.shape == (len(reads), DIMENSIONS)
        assert np.abs(stored - get_embedder().embed(reads)).max() < 1e-3


def test_reindexing_replaces_them_and_deleting_removes_them(personas):
    document = ingest(personas, "skerryvore.txt", LIGHTHOUSE)
    before = UnitVectors.objects.filter(document=document).count()
    documents.document_reindex(workspace=personas.workspace_a, actor=None, document_id=document.pk)
    documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    assert UnitVectors.objects.filter(document=document).count() == before == Chunk.objects.filter(document=document).count()
    documents.document_delete(workspace=personas.workspace_a, actor=personas.owner, document_id=document.pk)
    assert not UnitVectors.objects.filter(workspace=personas.workspace_a).exists()


def test_an_answer_embeds_its_question_and_no_passage(personas, monkeypatch):
    ingest(personas, "skerryvore.txt", LIGHTHOUSE)
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)  # the product's own
    embedder.forget()
    encoded: list[str] = []
    real = embedder._encode
    monkeypatch.setattr(embedder, "_encode", lambda texts, batch_size: encoded.extend(texts) or real(texts, batch_size))
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION)
    assert not run.insufficient
    assert run.claims
    assert encoded == [QUESTION], encoded
