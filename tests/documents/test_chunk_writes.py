"""The chunk writer is single-pass: one COPY and one INSERT per batch, no chunk updated after it is
written, and what it stores is what the per-chunk update path stored before it (issue #17)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction

from apps.documents.models import Chunk, Document, DocumentStatus, IndexStat, TermStat
from apps.documents.services import ChunkWrite, document_chunks_write, document_chunks_write_many
from apps.documents.sql import vector_index_ensure, vector_index_name
from apps.pipeline.parsing import extract
from apps.pipeline.text import chunk_text
from tests.factories import DocumentFactory

TEXTS = {
    "otters": "Sea otters hold hands while they sleep so that they do not drift apart. Otters eat sea urchins, "
    "crabs and clams, and they crack the shells open on stones they carry. " * 3,
    "beavers": "Beavers build dams from branches and mud. A beaver dam can flood a whole valley, and the pond "
    "behind it shelters fish, frogs and birds through the winter. " * 4,
    "bees": "Honey bees dance to tell the hive where flowers are. Bees make honey from nectar.",
    # Only stop words and punctuation: no lexeme, a token count of 0 and an empty BM25 vector.
    "empty": "... and the of? To be, or not to be!",
}

# The writer as it stood before #17, frozen here as the reference: rows inserted by the ORM, then
# each of the document's chunks updated twice — token counts, then BM25 vectors weighted with the
# statistics once the document is counted in. The document's old chunks leave first.
_OLD_LOCK = [
    "INSERT INTO documents_indexstat (workspace_id, chunk_count, token_total) VALUES (%(workspace)s, 0, 0) "
    "ON CONFLICT (workspace_id) DO NOTHING",
    "SELECT 1 FROM documents_indexstat WHERE workspace_id = %(workspace)s FOR UPDATE",
]
_OLD_TERMS = """
    SELECT u.lexeme, count(*) AS df
    FROM documents_chunk c, unnest(c.search_vector) AS u
    WHERE c.workspace_id = %(workspace)s AND c.document_id = %(document)s
    GROUP BY u.lexeme
"""
_OLD_TOTALS = """
    SELECT count(*) AS n, coalesce(sum(token_count), 0) AS tokens FROM documents_chunk
    WHERE workspace_id = %(workspace)s AND document_id = %(document)s
"""
_OLD_REMOVE = [
    f"UPDATE documents_termstat s SET df = s.df - t.df FROM ({_OLD_TERMS}) t WHERE s.workspace_id = %(workspace)s AND s.lexeme = t.lexeme",
    "DELETE FROM documents_termstat WHERE workspace_id = %(workspace)s AND df = 0",
    "UPDATE documents_indexstat s SET chunk_count = s.chunk_count - d.n, token_total = s.token_total - d.tokens "
    f"FROM ({_OLD_TOTALS}) d WHERE s.workspace_id = %(workspace)s",
]
_OLD_INDEX = [
    """UPDATE documents_chunk c
    SET token_count = (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(c.search_vector) AS u)
    WHERE c.workspace_id = %(workspace)s AND c.document_id = %(document)s""",
    f"""INSERT INTO documents_termstat (workspace_id, lexeme, df)
    SELECT %(workspace)s, lexeme, df FROM ({_OLD_TERMS}) t
    ON CONFLICT (workspace_id, lexeme) DO UPDATE SET df = documents_termstat.df + EXCLUDED.df""",
    "UPDATE documents_indexstat s SET chunk_count = s.chunk_count + d.n, token_total = s.token_total + d.tokens "
    f"FROM ({_OLD_TOTALS}) d WHERE s.workspace_id = %(workspace)s",
    """UPDATE documents_chunk c
    SET bm25 = (
        SELECT ('{' || coalesce(string_agg(w.dim || ':' || w.weight, ',' ORDER BY w.dim), '') || '}/268435457')::sparsevec
        FROM (
            SELECT trustrag_lexeme_dim(u.lexeme) AS dim,
                   sum(cardinality(u.positions) * (0.9 + 1)
                       / (cardinality(u.positions) + 0.9 * (1 - 0.4 + 0.4 * c.token_count / greatest(s.token_total::float8 / greatest(s.chunk_count, 1), 1)))) AS weight
            FROM unnest(c.search_vector) AS u
            GROUP BY 1
        ) w
    )
    FROM documents_indexstat s
    WHERE s.workspace_id = c.workspace_id AND c.workspace_id = %(workspace)s AND c.document_id = %(document)s""",
]


def _old_write(document: Document, extracted, drafts, vectors) -> None:
    params = {"workspace": str(document.workspace_id), "document": str(document.pk)}
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in _OLD_LOCK + _OLD_REMOVE:
            cursor.execute(statement, params)
        Chunk.objects.filter(workspace_id=document.workspace_id, document=document).delete()
        Chunk.objects.bulk_create(
            Chunk(
                workspace_id=document.workspace_id,
                document=document,
                ordinal=d.ordinal,
                text=d.text,
                first_page=extracted.page_of(d.start),
                last_page=extracted.page_of(d.end - 1),
                start_offset=d.start,
                end_offset=d.end,
                embedding=v,
            )
            for d, v in zip(drafts, vectors, strict=True)
        )
        for statement in _OLD_LOCK + _OLD_INDEX:
            cursor.execute(statement, params)


def _prepared(name: str, text: str, seed: int):
    extracted = extract(f"{name}.txt", text.encode())
    drafts = chunk_text(extracted.text, size=160, overlap=30)
    vectors = np.random.default_rng(seed).normal(size=(len(drafts), 384)).astype(np.float32)
    return extracted, drafts, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _stored(workspace) -> dict:
    """Everything the writer keeps for the keyword and dense legs, by document title and ordinal."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT d.title, c.ordinal, c.text, c.first_page, c.last_page, c.start_offset, c.end_offset,
                      c.token_count, c.bm25::text, c.search_vector::text, c.embedding::text
               FROM documents_chunk c JOIN documents_document d ON d.id = c.document_id
               WHERE c.workspace_id = %s ORDER BY 1, 2""",
            [str(workspace.pk)],
        )
        chunks = {(row[0], row[1]): row[2:] for row in cursor.fetchall()}
    stats = IndexStat.objects.get(workspace=workspace)
    return {
        "chunks": chunks,
        "terms": dict(TermStat.objects.filter(workspace=workspace).values_list("lexeme", "df")),
        "index": (stats.chunk_count, stats.token_total),
    }


@pytest.fixture
def prepared():
    return {name: _prepared(name, text, seed) for seed, (name, text) in enumerate(TEXTS.items())}


def test_one_batch_stores_what_the_per_chunk_update_path_stored(personas, prepared):
    new, old = personas.workspace_a, personas.workspace_b
    writes = []
    for name, (extracted, drafts, vectors) in prepared.items():
        writes.append(ChunkWrite(DocumentFactory(workspace=new, title=name), extracted, drafts, vectors))
        _old_write(DocumentFactory(workspace=old, title=name), extracted, drafts, vectors)

    written = document_chunks_write_many(workspace=new, writes=writes)

    assert written == sum(len(drafts) for _, drafts, _ in prepared.values()) > len(prepared)
    stored, reference = _stored(new), _stored(old)
    assert stored == reference
    assert sorted(
        Document.objects.filter(workspace=new).values_list("title", "status", "chunk_count", "progress_total", "kind", "text")
    ) == sorted(
        (name, DocumentStatus.READY, len(drafts), len(drafts), extracted.kind, extracted.text)
        for name, (extracted, drafts, _) in prepared.items()
    )
    assert stored["chunks"][("empty", 0)][5:7] == (0, "{}/268435457")
    assert all(row[5] > 0 and row[6] != "{}/268435457" for key, row in stored["chunks"].items() if key[0] != "empty")


def test_rewriting_a_document_replaces_its_chunks_and_statistics_as_before(personas, prepared):
    new, old = personas.workspace_a, personas.workspace_b
    documents = {}
    for name, (extracted, drafts, vectors) in prepared.items():
        documents[name] = DocumentFactory(workspace=new, title=name)
        document_chunks_write(document=documents[name], extracted=extracted, drafts=drafts, vectors=vectors, chunking=(800, 120))
        _old_write(DocumentFactory(workspace=old, title=name), extracted, drafts, vectors)
    extracted, drafts, vectors = _prepared("beavers", "Beavers gnaw trees with teeth that never stop growing.", 9)

    document_chunks_write(document=documents["beavers"], extracted=extracted, drafts=drafts, vectors=vectors, chunking=(800, 120))
    _old_write(Document.objects.get(workspace=old, title="beavers"), extracted, drafts, vectors)

    stored, reference = _stored(new), _stored(old)
    assert stored["chunks"] == reference["chunks"]
    assert stored["terms"] == reference["terms"]
    assert (
        stored["index"] == reference["index"] == (Chunk.objects.filter(workspace=new).count(), sum(r[5] for r in stored["chunks"].values()))
    )
    assert "dam" not in stored["terms"], "the lexemes of the replaced chunks are gone"


def test_a_write_is_one_copy_and_one_insert_whatever_the_number_of_chunks(personas, prepared):
    """No chunk is updated after it is written (each leaves one row version, so one entry in each
    index), and the statements do not grow with the chunks."""
    workspace = personas.workspace_a
    with connection.cursor() as cursor:
        vector_index_ensure(cursor, workspace_id=workspace.pk)  # the first write's, counted apart below

    def write(names: list[str]) -> tuple[list[str], int, int]:
        writes = [ChunkWrite(DocumentFactory(workspace=workspace, title=n), *prepared[n]) for n in names]
        statements = []
        with transaction.atomic(), connection.cursor() as cursor:
            before = _tuple_counts(cursor)
            with connection.execute_wrapper(lambda execute, sql, *args: statements.append(sql) or execute(sql, *args)):
                document_chunks_write_many(workspace=workspace, writes=writes)
            inserted, updated = (after - was for after, was in zip(_tuple_counts(cursor), before, strict=True))
        return statements, inserted, updated

    few, inserted_few, updated_few = write(["bees"])
    many, inserted_many, updated_many = write(["otters", "beavers", "empty"])

    assert inserted_few == len(prepared["bees"][1])
    assert updated_few == 0
    assert inserted_many == sum(len(prepared[n][1]) for n in ("otters", "beavers", "empty")) > 3 * inserted_few
    assert updated_many == 0
    assert len(many) == len(few)
    assert not [s for s in many if "UPDATE documents_chunk" in s]
    assert sum(s.lstrip().startswith("WITH terms") and "INSERT INTO documents_chunk" in s for s in many) == 1
    assert Chunk.objects.filter(workspace=workspace).count() == inserted_few + inserted_many


def _tuple_counts(cursor) -> tuple[int, int]:
    """Rows this transaction inserted into and updated in the chunk table so far."""
    cursor.execute(
        "SELECT pg_stat_get_xact_tuples_inserted('documents_chunk'::regclass), pg_stat_get_xact_tuples_updated('documents_chunk'::regclass)"
    )
    return cursor.fetchone()


def test_a_write_keeps_to_its_workspace(personas, prepared):
    mine = DocumentFactory(workspace=personas.workspace_a, title="bees")
    theirs = DocumentFactory(workspace=personas.workspace_b, title="otters")
    writes = [ChunkWrite(mine, *prepared["bees"]), ChunkWrite(theirs, *prepared["otters"])]

    with pytest.raises(ValueError, match="belong to its workspace"):
        document_chunks_write_many(workspace=personas.workspace_a, writes=writes)
    with pytest.raises(ValueError, match="each document once"):
        document_chunks_write_many(workspace=personas.workspace_a, writes=[writes[0], writes[0]])

    assert not Chunk.objects.exists()
    assert not IndexStat.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_first_writes_that_each_build_an_index_take_turns_instead_of_deadlocking(prepared):
    """A writer builds its workspace's HNSW index and, before it inserts, a writer of another new
    workspace starts: with CREATE INDEX's SHARE lock alone both would build, then each INSERT
    would wait for the other's lock (bench_scale's two writers deadlocked so)."""
    import threading
    import time

    from tests.factories import WorkspaceFactory

    first, second = WorkspaceFactory(), WorkspaceFactory()
    documents = {w.pk: DocumentFactory(workspace=w, title="bees") for w in (first, second)}
    built, failures = threading.Event(), []

    def write_second():
        try:
            built.wait(10)
            document_chunks_write_many(workspace=second, writes=[ChunkWrite(documents[second.pk], *prepared["bees"])])
        except Exception as exc:  # reported below, in the test's thread
            failures.append(exc)
        finally:
            connection.close()

    other = threading.Thread(target=write_second)
    other.start()
    with transaction.atomic(), connection.cursor() as cursor:
        assert vector_index_ensure(cursor, workspace_id=first.pk) is True
        built.set()
        time.sleep(0.5)  # the other writer reaches its own index build meanwhile
        document_chunks_write_many(workspace=first, writes=[ChunkWrite(documents[first.pk], *prepared["bees"])])
    other.join(30)

    assert not other.is_alive()
    assert not failures
    for workspace in (first, second):
        assert Chunk.objects.filter(workspace=workspace).count() == len(prepared["bees"][1])
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [vector_index_name(workspace.pk)])
            assert cursor.fetchone()[0]
