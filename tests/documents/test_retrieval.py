"""The hybrid SQL: BM25 in Postgres, both legs inside the workspace, k rows under a selective filter."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from django.db import connection, transaction

from apps.documents import services
from apps.documents.models import Chunk, Document, IndexStat, TermStat
from apps.documents.sql import hybrid_search
from apps.pipeline.bm25 import K1, B
from apps.pipeline.embedding import get_embedder
from apps.pipeline.retrieval import RetrievalParams
from tests.factories import ChunkFactory, DocumentFactory

CORPUS = {
    "otters.txt": "Sea otters hold hands while they sleep so that they do not drift apart. Otters eat sea urchins.",
    "beavers.txt": "Beavers build dams from branches and mud. A beaver dam can flood a whole valley.",
    "bees.txt": "Honey bees dance to tell the hive where flowers are. Bees make honey from nectar.",
    "rivers.txt": "Rivers carry mud to the sea. Mud settles where the river slows, and the delta grows.",
}


def add(workspace, name: str, text: str) -> Document:
    document, _ = services.document_create(workspace=workspace, actor=None, filename=name, data=text.encode(), enqueue=False)
    services.document_ingest(workspace=workspace, document_id=document.pk)
    return Document.objects.get(pk=document.pk)


def search(workspace, question: str, **params) -> list:
    vector = get_embedder().embed([question])[0]
    with transaction.atomic(), connection.cursor() as cursor:
        return hybrid_search(cursor, workspace_id=workspace.pk, question=question, query_vector=vector, params=RetrievalParams(**params))


def lexemes(text: str) -> Counter:
    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector('english', %s))", [text])
        return Counter(dict(cursor.fetchall()))


def reference_bm25(question: str, texts: dict[str, str]) -> dict[str, float]:
    """Textbook BM25 (Lucene IDF) over Postgres's own lexemes, computed here in Python."""
    docs = {key: lexemes(text) for key, text in texts.items()}
    n = len(docs)
    avgdl = sum(sum(tf.values()) for tf in docs.values()) / n
    df = Counter(term for tf in docs.values() for term in tf)
    scores = {}
    for key, tf in docs.items():
        dl = sum(tf.values())
        score = 0.0
        for term in lexemes(question):
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] * (K1 + 1) / (tf[term] + K1 * (1 - B + B * dl / avgdl))
        if score:
            scores[key] = score
    return scores


@pytest.fixture
def corpus(personas):
    documents = {name: add(personas.workspace_a, name, text) for name, text in CORPUS.items()}
    # Re-index so that every chunk is weighted with the final average length.
    for document in documents.values():
        services.document_reindex(workspace=personas.workspace_a, actor=None, document_id=document.pk)
        services.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    return documents


def test_keyword_leg_scores_are_real_bm25(corpus, personas):
    question = "Where does the mud of rivers go, and what do beavers build?"
    found = search(personas.workspace_a, question, dense_k=0, keyword_k=10)
    expected = reference_bm25(question, {f"{name.removesuffix('.txt')}": text for name, text in CORPUS.items()})
    assert {c.document_title: round(c.keyword_score, 5) for c in found} == {k: round(v, 5) for k, v in expected.items()}
    assert [c.keyword_rank for c in found] == list(range(1, len(found) + 1))


def test_keyword_leg_does_not_need_every_word(corpus, personas):
    found = search(personas.workspace_a, "honey xylophone quasar", dense_k=0, keyword_k=10)
    assert [c.document_title for c in found] == ["bees"]


def test_statistics_follow_deletion(corpus, personas):
    services.document_delete(workspace=personas.workspace_a, actor=None, document_id=corpus["rivers.txt"].pk)
    stats = IndexStat.objects.get(workspace=personas.workspace_a)
    chunks = Chunk.objects.filter(workspace=personas.workspace_a)
    assert stats.chunk_count == chunks.count()
    assert stats.token_total == sum(chunks.values_list("token_count", flat=True))
    expected = Counter(term for text in chunks.values_list("text", flat=True) for term in lexemes(text))
    assert dict(TermStat.objects.filter(workspace=personas.workspace_a).values_list("lexeme", "df")) == dict(expected)
    assert search(personas.workspace_a, "delta", dense_k=0, keyword_k=10) == []


def test_a_chunk_of_another_workspace_never_appears_even_when_it_is_the_nearest(personas):
    add(personas.workspace_a, "bees.txt", CORPUS["bees.txt"])
    question = "Which animal sleeps holding hands with another?"
    add(personas.workspace_b, "otters.txt", CORPUS["otters.txt"] + " " + question)
    found = search(personas.workspace_a, question, dense_k=10, keyword_k=10)
    assert {c.document_title for c in found} == {"bees"}
    assert {c.document_title for c in search(personas.workspace_b, question)} == {"otters"}


def test_a_selective_workspace_filter_still_returns_k_rows(personas):
    rng = np.random.default_rng(7)
    document_b = DocumentFactory(workspace=personas.workspace_b, title="noise")
    document_a = DocumentFactory(workspace=personas.workspace_a, title="few")

    def rows(workspace, document, count):
        vectors = rng.normal(size=(count, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return [
            ChunkFactory.build(workspace=workspace, document=document, ordinal=i, text=f"t{i}", embedding=v) for i, v in enumerate(vectors)
        ]

    Chunk.objects.bulk_create(rows(personas.workspace_b, document_b, 3000), batch_size=500)
    Chunk.objects.bulk_create(rows(personas.workspace_a, document_a, 12))
    question_vector = get_embedder().embed(["anything at all"])[0]
    with transaction.atomic(), connection.cursor() as cursor:
        # Make the planner walk the HNSW index, as it does when a workspace is not tiny.
        cursor.execute("SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        found = hybrid_search(
            cursor,
            workspace_id=personas.workspace_a.pk,
            question="x",
            query_vector=question_vector,
            params=RetrievalParams(dense_k=10, keyword_k=0, ef_search=40),
        )
        assert len(found) == 10
        assert {c.document_title for c in found} == {"few"}

        # Without the iterative scan the index hands back its 40 best of all workspaces and the filter leaves few.
        cursor.execute("SET LOCAL hnsw.iterative_scan = off")
        cursor.execute(
            "SELECT count(*) FROM (SELECT id FROM documents_chunk WHERE workspace_id = %s ORDER BY embedding <=> %s::vector LIMIT 10) x",
            [str(personas.workspace_a.pk), "[" + ",".join(map(str, question_vector)) + "]"],
        )
        assert cursor.fetchone()[0] < 10


def test_the_keyword_index_holds_the_workspace_beside_the_lexemes(db):
    """The GIN index is on (workspace_id, search_vector) through btree_gin, so a keyword scan
    keeps to the workspace inside the index (bench_scale measures what that buys at 100,000
    chunks; on a table this small the planner may rightly prefer another path)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'documents_chunk' AND indexdef LIKE '%%USING gin%%'")
        definitions = [row[0] for row in cursor.fetchall()]
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'btree_gin'")
        assert cursor.fetchone() == (1,)
    assert definitions == ["CREATE INDEX chunk_ws_search_gin ON public.documents_chunk USING gin (workspace_id, search_vector)"]


def test_the_embedded_database_keeps_a_gigabyte_of_buffers(db):
    """The embedded server is configured for a workspace's working set (see apps.core.embedded)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))")
        assert cursor.fetchone()[0] == 1024**3
