"""The hybrid SQL: BM25 in Postgres, both legs inside the workspace, k rows under a selective filter."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from django.db import connection, transaction

from apps.core.embedded import shared_buffers_bytes
from apps.core.serving import memory_bytes
from apps.documents import services
from apps.documents.models import Chunk, Document, IndexStat, TermStat
from apps.documents.sql import hybrid_search, vector_index_ensure, vector_index_name
from apps.pipeline.bm25 import K1, B
from apps.pipeline.embedding import get_embedder
from apps.pipeline.retrieval import RetrievalParams, ef_search_for, vector_literal
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


def _random_chunks(rng, workspace, document, count):
    vectors = rng.normal(size=(count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [ChunkFactory.build(workspace=workspace, document=document, ordinal=i, text=f"t{i}", embedding=v) for i, v in enumerate(vectors)]


def test_each_workspace_gets_its_own_vector_index_at_its_first_write(personas):
    both = (personas.workspace_a, personas.workspace_b)
    assert not _vector_indexes(*both)
    add(personas.workspace_a, "otters.txt", CORPUS["otters.txt"])
    add(personas.workspace_a, "bees.txt", CORPUS["bees.txt"])
    add(personas.workspace_b, "beavers.txt", CORPUS["beavers.txt"])
    indexes = _vector_indexes(*both)
    assert set(indexes) == {vector_index_name(personas.workspace_a.pk), vector_index_name(personas.workspace_b.pk)}
    assert f"WHERE (workspace_id = '{personas.workspace_a.pk}'::uuid)" in indexes[vector_index_name(personas.workspace_a.pk)]
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes[vector_index_name(personas.workspace_a.pk)]
    with connection.cursor() as cursor:
        assert vector_index_ensure(cursor, workspace_id=personas.workspace_a.pk) is False  # there already


def test_a_selective_workspace_filter_walks_the_workspaces_own_index_and_returns_k_rows(personas):
    """12 rows of workspace A beside 3,000 of B: the dense leg walks A's index alone, so a short
    candidate list (ef_search 20, raised to 40 for 10 rows) still hands back dense_k of A's rows,
    and only A's."""
    rng = np.random.default_rng(7)
    document_b = DocumentFactory(workspace=personas.workspace_b, title="noise")
    document_a = DocumentFactory(workspace=personas.workspace_a, title="few")
    with connection.cursor() as cursor:
        for workspace in (personas.workspace_a, personas.workspace_b):
            assert vector_index_ensure(cursor, workspace_id=workspace.pk) is True
    Chunk.objects.bulk_create(_random_chunks(rng, personas.workspace_b, document_b, 3000), batch_size=500)
    Chunk.objects.bulk_create(_random_chunks(rng, personas.workspace_a, document_a, 12))
    question_vector = get_embedder().embed(["anything at all"])[0]
    with transaction.atomic(), connection.cursor() as cursor:
        # Make the planner walk an HNSW index, as it does when a workspace is not tiny.
        cursor.execute("SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        cursor.execute("ANALYZE documents_chunk")
        cursor.execute(
            "EXPLAIN SELECT id FROM documents_chunk WHERE workspace_id = %s ORDER BY embedding <=> %s::vector LIMIT 10",
            [str(personas.workspace_a.pk), vector_literal(question_vector)],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        assert vector_index_name(personas.workspace_a.pk) in plan
        assert vector_index_name(personas.workspace_b.pk) not in plan
        found = hybrid_search(
            cursor,
            workspace_id=personas.workspace_a.pk,
            question="x",
            query_vector=question_vector,
            params=RetrievalParams(dense_k=10, keyword_k=0, ef_search=20),
        )
        assert len(found) == 10
        assert {c.document_title for c in found} == {"few"}


def test_a_dense_leg_deeper_than_the_default_candidate_list_gets_every_row_it_asks_for(personas):
    """pgvector's HNSW scan returns at most ef_search rows: a workspace asking for 150 dense
    candidates (the setting goes up to 200) gets 150, not the default list's 100."""
    rng = np.random.default_rng(11)
    document = DocumentFactory(workspace=personas.workspace_a, title="many")
    with connection.cursor() as cursor:
        vector_index_ensure(cursor, workspace_id=personas.workspace_a.pk)
    Chunk.objects.bulk_create(_random_chunks(rng, personas.workspace_a, document, 400), batch_size=400)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        cursor.execute("ANALYZE documents_chunk")
        found = hybrid_search(
            cursor,
            workspace_id=personas.workspace_a.pk,
            question="x",
            query_vector=get_embedder().embed(["anything at all"])[0],
            params=RetrievalParams(dense_k=150, keyword_k=0),
        )
        assert ef_search_for(RetrievalParams(dense_k=150, keyword_k=0)) == 600
        assert len(found) == 150


def test_deleting_a_workspace_drops_its_vector_index(personas):
    from apps.workspaces.services import workspace_delete

    add(personas.workspace_a, "otters.txt", CORPUS["otters.txt"])
    add(personas.workspace_b, "beavers.txt", CORPUS["beavers.txt"])
    gone, kept = personas.workspace_a.pk, personas.workspace_b.pk
    workspace_delete(workspace=personas.workspace_a, actor=None)
    assert set(_vector_indexes(gone, kept)) == {vector_index_name(kept)}


def _vector_indexes(*workspaces) -> dict[str, str]:
    """The chunk table's vector indexes of these workspaces (or workspace ids), by name; other
    tests' may be there too."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'documents_chunk' AND indexname = ANY(%s)",
            [[vector_index_name(getattr(w, "pk", w)) for w in workspaces]],
        )
        return dict(cursor.fetchall())


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


def test_the_embedded_database_keeps_a_quarter_of_the_machines_memory_in_its_buffers(db):
    """The embedded server is configured for a large workspace's working set (see apps.core.embedded)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))")
        assert cursor.fetchone()[0] == shared_buffers_bytes(memory_bytes())
