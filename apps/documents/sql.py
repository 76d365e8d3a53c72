"""The SQL beside its tables: BM25 statistics and chunk vectors kept at ingestion, and the one
hybrid statement that retrieves (both legs scoped to the workspace, fused by weighted RRF).
The maths and its parameters are apps/pipeline/bm25.py and apps/pipeline/retrieval.py."""

from __future__ import annotations

import uuid

from apps.pipeline.bm25 import CANDIDATE_MAX_DF_SHARE, K1, LEXEME_DIMENSIONS, B
from apps.pipeline.retrieval import RetrievalParams, ef_search_for, vector_literal
from apps.pipeline.types import Candidate

LEXEME_DIM_FUNCTION = """
CREATE OR REPLACE FUNCTION trustrag_lexeme_dim(lexeme text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT ('x' || substr(md5(lexeme), 1, 7))::bit(28)::integer + 1 $$;
"""

# Statistics change under a lock on the workspace's IndexStat row (see LOCK_STATS), so
# concurrent ingestions in one workspace take turns here and never deadlock.
LOCK_STATS = """
INSERT INTO documents_indexstat (workspace_id, chunk_count, token_total) VALUES (%(workspace)s, 0, 0)
ON CONFLICT (workspace_id) DO NOTHING;
SELECT 1 FROM documents_indexstat WHERE workspace_id = %(workspace)s FOR UPDATE;
"""

_DOCUMENT_TERMS = """
    SELECT u.lexeme, count(*) AS df
    FROM documents_chunk c, unnest(c.search_vector) AS u
    WHERE c.workspace_id = %(workspace)s AND c.document_id = ANY(%(documents)s::uuid[])
    GROUP BY u.lexeme
"""

_DOCUMENT_TOTALS = """
    SELECT count(*) AS n, coalesce(sum(token_count), 0) AS tokens FROM documents_chunk
    WHERE workspace_id = %(workspace)s AND document_id = ANY(%(documents)s::uuid[])
"""

# A lexeme whose every chunk goes loses its row; the others count down. One pass over the
# documents' own lexemes, never over the workspace's whole vocabulary.
REMOVE_DOCUMENT_STATS = f"""
WITH t AS ({_DOCUMENT_TERMS}),
gone AS (
    DELETE FROM documents_termstat s USING t
    WHERE s.workspace_id = %(workspace)s AND s.lexeme = t.lexeme AND s.df <= t.df
)
UPDATE documents_termstat s SET df = s.df - t.df
FROM t
WHERE s.workspace_id = %(workspace)s AND s.lexeme = t.lexeme AND s.df > t.df;
UPDATE documents_indexstat s SET chunk_count = s.chunk_count - d.n, token_total = s.token_total - d.tokens
FROM ({_DOCUMENT_TOTALS}) d
WHERE s.workspace_id = %(workspace)s;
DELETE FROM documents_chunk WHERE workspace_id = %(workspace)s AND document_id = ANY(%(documents)s::uuid[]);
"""

HAS_CHUNKS = "SELECT EXISTS (SELECT 1 FROM documents_chunk WHERE workspace_id = %(workspace)s AND document_id = ANY(%(documents)s::uuid[]))"

# A batch of chunks is staged with one COPY, then written with one INSERT … SELECT that computes
# what the keyword leg needs on the way in: the lexemes (the same `to_tsvector` as the generated
# `search_vector`), the token count and the BM25 vector. No row is updated after it is written,
# so each chunk leaves one entry in each index.
STAGE_CHUNKS = """
CREATE TEMP TABLE trustrag_chunk_staging (
    seq integer NOT NULL,
    document_id uuid NOT NULL,
    ordinal integer NOT NULL,
    text text NOT NULL,
    first_page integer NOT NULL,
    last_page integer NOT NULL,
    start_offset integer NOT NULL,
    end_offset integer NOT NULL,
    embedding vector NOT NULL
) ON COMMIT DROP
"""
STAGED_COLUMNS = ("seq", "document_id", "ordinal", "text", "first_page", "last_page", "start_offset", "end_offset", "embedding")
# The binary COPY's type per column; the embedding goes as pgvector's own binary form (the bytes
# its receive function reads), which is what a bytea field carries through COPY unchanged.
STAGED_TYPES = ("int4", "uuid", "int4", "text", "int4", "int4", "int4", "int4", "bytea")
COPY_STAGED = f"COPY trustrag_chunk_staging ({', '.join(STAGED_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
DROP_STAGED = "DROP TABLE trustrag_chunk_staging"

# Set-based, one pass over the batch's lexemes: each chunk's terms (the same `to_tsvector` as the
# generated `search_vector`), its token count, its document's average chunk length, then its BM25
# weights by dimension; the workspace's statistics count the batch in within the same statement.
# Every part reads the statistics as they were before it (one snapshot), so the average length a
# document is weighted with is the workspace's once that document is counted in — its batch
# predecessors (`seq` order) included, its successors not — exactly as when documents are written
# one at a time.
WRITE_STAGED = f"""
WITH terms AS MATERIALIZED (
    SELECT s.seq, s.ordinal, u.lexeme, cardinality(u.positions) AS tf
    FROM trustrag_chunk_staging s, unnest(to_tsvector('english', s.text)) AS u
),
lengths AS MATERIALIZED (
    SELECT s.seq, s.ordinal, coalesce(sum(t.tf), 0)::integer AS token_count
    FROM trustrag_chunk_staging s LEFT JOIN terms t ON t.seq = s.seq AND t.ordinal = s.ordinal
    GROUP BY s.seq, s.ordinal
),
averages AS (
    SELECT r.seq, (i.token_total + r.tokens)::float8 / greatest(i.chunk_count + r.chunks, 1) AS avgdl
    FROM (
        SELECT seq, (sum(count(*)) OVER w)::bigint AS chunks, (sum(sum(token_count)) OVER w)::bigint AS tokens
        FROM lengths GROUP BY seq
        WINDOW w AS (ORDER BY seq)
    ) r, documents_indexstat i
    WHERE i.workspace_id = %(workspace)s
),
weights AS (
    SELECT t.seq, t.ordinal, trustrag_lexeme_dim(t.lexeme) AS dim,
           sum(t.tf * ({K1} + 1) / (t.tf + {K1} * (1 - {B} + {B} * l.token_count / greatest(a.avgdl, 1)))) AS weight
    FROM terms t
    JOIN lengths l ON l.seq = t.seq AND l.ordinal = t.ordinal
    JOIN averages a ON a.seq = t.seq
    GROUP BY 1, 2, 3
),
vectors AS (
    SELECT seq, ordinal, string_agg(dim || ':' || weight, ',' ORDER BY dim) AS pairs FROM weights GROUP BY 1, 2
),
frequencies AS (
    INSERT INTO documents_termstat (workspace_id, lexeme, df)
    SELECT %(workspace)s::uuid, lexeme, count(*) FROM terms GROUP BY lexeme
    ON CONFLICT (workspace_id, lexeme) DO UPDATE SET df = documents_termstat.df + EXCLUDED.df
),
totals AS (
    UPDATE documents_indexstat s SET chunk_count = s.chunk_count + d.n, token_total = s.token_total + d.tokens
    FROM (SELECT count(*) AS n, coalesce(sum(token_count), 0) AS tokens FROM lengths) d
    WHERE s.workspace_id = %(workspace)s
)
INSERT INTO documents_chunk (id, workspace_id, created_at, document_id, ordinal, text, first_page, last_page,
                             start_offset, end_offset, embedding, token_count, bm25)
SELECT gen_random_uuid(), %(workspace)s::uuid, %(now)s::timestamptz, s.document_id, s.ordinal, s.text, s.first_page,
       s.last_page, s.start_offset, s.end_offset, s.embedding, l.token_count,
       ('{{' || coalesce(v.pairs, '') || '}}/{LEXEME_DIMENSIONS}')::sparsevec
FROM trustrag_chunk_staging s
JOIN lengths l ON l.seq = s.seq AND l.ordinal = s.ordinal
LEFT JOIN vectors v ON v.seq = s.seq AND v.ordinal = s.ordinal
ORDER BY s.seq, s.ordinal
"""


def statements(script: str) -> list[str]:
    """The statements of one of the scripts above, to execute one by one."""
    return [part.strip() for part in script.split(";\n") if part.strip()]


# The keyword leg's CTEs, spliced into the one hybrid statement.
KEYWORD_CTES = f"""
kw_stats AS (
    SELECT greatest(chunk_count, 1)::float8 AS n FROM documents_indexstat WHERE workspace_id = %(workspace)s
),
kw_terms AS (
    SELECT t.lexeme, t.df, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %(question)s))) AS q
    JOIN documents_termstat t ON t.workspace_id = %(workspace)s AND t.lexeme = q.lexeme AND t.df > 0
    CROSS JOIN kw_stats s
),
kw_query AS (
    SELECT ('{{' || coalesce(string_agg(v.dim || ':' || v.idf, ',' ORDER BY v.dim), '') || '}}/{LEXEME_DIMENSIONS}')::sparsevec AS vector
    FROM (SELECT trustrag_lexeme_dim(lexeme) AS dim, sum(idf) AS idf FROM kw_terms GROUP BY 1) v
),
kw_nominators AS (
    SELECT coalesce(string_agg(quote_literal(lexeme), ' | '), '')::tsquery AS query
    FROM kw_terms
    WHERE df <= {CANDIDATE_MAX_DF_SHARE} * (SELECT n FROM kw_stats)
       OR NOT EXISTS (SELECT 1 FROM kw_terms WHERE df <= {CANDIDATE_MAX_DF_SHARE} * (SELECT n FROM kw_stats))
),
keyword AS (
    SELECT k.id, k.score, row_number() OVER (ORDER BY k.score DESC, k.id) AS rank
    FROM (
        SELECT c.id, -(c.bm25 <#> q.vector) AS score
        FROM documents_chunk c, kw_query q, kw_nominators n
        WHERE c.workspace_id = %(workspace)s AND c.search_vector @@ n.query
        ORDER BY c.bm25 <#> q.vector, c.id
        LIMIT %(keyword_k)s
    ) k
)"""


def unindex_document(cursor, *, workspace_id, document_id) -> None:
    """Take a document's chunks out of the statistics and delete them."""
    params = _params(workspace_id, [document_id])
    _run(cursor, LOCK_STATS + REMOVE_DOCUMENT_STATS, params)


# Each workspace's chunk vectors have an HNSW index of their own: a partial index on the chunk
# table whose predicate names the workspace, so the dense leg's `WHERE workspace_id = …` walks
# that workspace's graph alone and keeps every row it finds. One index over every workspace had
# to be walked about 1/share rows deep per row kept and still lost neighbours: at a million
# chunks in 100 workspaces, recall@10 0.912 and p95 312 ms (docs/benchmarks.md, bench_scale). DDL takes no
# parameters: the name and the predicate are made from the workspace's UUID, parsed first.
VECTOR_INDEX_METHOD = "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"


def vector_index_name(workspace_id) -> str:
    return f"chunk_vec_{uuid.UUID(str(workspace_id)).hex}"


def vector_index_ensure(cursor, *, workspace_id) -> bool:
    """Create the workspace's HNSW index unless it exists: a catalog look-up when it does. Building
    it (once per workspace, before its first chunk is written; call it before this transaction
    changes any chunk) reads the chunk table under a SHARE ROW EXCLUSIVE lock: readers go on,
    writers wait for this transaction to commit. That lock, unlike CREATE INDEX's own SHARE lock,
    excludes its like, so two writers that each build an index take turns instead of deadlocking
    on their INSERTs. Returns whether it was built."""
    workspace = uuid.UUID(str(workspace_id))
    name = vector_index_name(workspace)
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
    if cursor.fetchone()[0]:
        return False
    cursor.execute("LOCK TABLE documents_chunk IN SHARE ROW EXCLUSIVE MODE")
    predicate = f"workspace_id = '{workspace}'::uuid"
    # An index cannot be made on a table with deferred foreign-key checks still pending in this
    # transaction (chunks written earlier in it): run them now, then defer again as Django does.
    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON documents_chunk {VECTOR_INDEX_METHOD} WHERE {predicate}")
    cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    return True


def vector_index_drop(cursor, *, workspace_id) -> None:
    """Drop the workspace's HNSW index (its chunks are gone or going in the same transaction)."""
    cursor.execute(f"DROP INDEX IF EXISTS {vector_index_name(workspace_id)}")


def write_chunks(cursor, *, workspace_id, document_ids: list, rows, now) -> int:
    """Replace the chunks of these documents (all of one workspace) with `rows`, one tuple per
    chunk in STAGED_COLUMNS order with `seq` the document's place in `document_ids`, and count them
    into the workspace's BM25 statistics. One COPY and one INSERT (which also counts the statistics)
    whatever the number of rows; run inside a transaction. Returns the number of chunks written."""
    params = _params(workspace_id, document_ids) | {"now": now}
    _run(cursor, LOCK_STATS, params)
    vector_index_ensure(cursor, workspace_id=workspace_id)
    cursor.execute(HAS_CHUNKS, params)
    if cursor.fetchone()[0]:
        _run(cursor, REMOVE_DOCUMENT_STATS, params)
    cursor.execute(STAGE_CHUNKS)
    with cursor.copy(COPY_STAGED) as copy:
        copy.set_types(STAGED_TYPES)
        for row in rows:
            copy.write_row(row)
    cursor.execute(WRITE_STAGED, params)
    written = cursor.rowcount
    cursor.execute(DROP_STAGED)
    return written


DOCUMENTS_WRITTEN = """
UPDATE documents_document d
SET kind = v.kind, text = v.text, page_count = v.page_count, chunk_count = v.chunk_count,
    indexed_chunk_size = v.chunk_size, indexed_chunk_overlap = v.chunk_overlap, indexed_embedder = %(embedder)s,
    progress_done = v.chunk_count, progress_total = v.chunk_count, status = %(status)s, error = '', updated_at = %(now)s
FROM unnest(%(documents)s::uuid[], %(kinds)s::text[], %(texts)s::text[], %(pages)s::integer[], %(chunks)s::integer[],
            %(sizes)s::integer[], %(overlaps)s::integer[])
    AS v(id, kind, text, page_count, chunk_count, chunk_size, chunk_overlap)
WHERE d.workspace_id = %(workspace)s AND d.id = v.id
"""


def documents_mark_written(cursor, *, workspace_id, documents: list[tuple], status: str, now, embedder: str = "") -> None:
    """Each (id, kind, text, page count, chunk count, chunk size, chunk overlap) document of the
    workspace gets its text, counts, chunking (None: not known), the embedder its vectors came from
    and the status, in one statement."""
    ids, kinds, texts, pages, chunks, sizes, overlaps = zip(*documents, strict=True) if documents else ([],) * 7
    params = _params(workspace_id, ids) | {
        "kinds": list(kinds),
        "texts": list(texts),
        "pages": list(pages),
        "chunks": list(chunks),
        "sizes": list(sizes),
        "overlaps": list(overlaps),
        "status": status,
        "now": now,
        "embedder": embedder,
    }
    cursor.execute(DOCUMENTS_WRITTEN, params)


def _params(workspace_id, document_ids: list) -> dict:
    return {"workspace": str(workspace_id), "documents": [str(d) for d in document_ids]}


def _run(cursor, script: str, params: dict) -> None:
    for statement in statements(script):
        cursor.execute(statement, params)


HYBRID_SQL = f"""
WITH dense AS (
    SELECT d.id, 1 - d.distance AS score, row_number() OVER (ORDER BY d.distance, d.id) AS rank
    FROM (
        SELECT id, embedding <=> %(qvec)s::vector AS distance
        FROM documents_chunk
        WHERE workspace_id = %(workspace)s
        ORDER BY embedding <=> %(qvec)s::vector
        LIMIT %(dense_k)s
    ) d
),
{KEYWORD_CTES},
fused AS (
    SELECT coalesce(d.id, k.id) AS id,
           d.rank AS dense_rank, d.score AS dense_score,
           k.rank AS keyword_rank, k.score AS keyword_score,
           coalesce(%(dense_weight)s / (%(rrf_k)s + d.rank), 0)
             + coalesce(%(keyword_weight)s / (%(rrf_k)s + k.rank), 0) AS fused_score
    FROM dense d FULL OUTER JOIN keyword k ON k.id = d.id
)
SELECT f.id, c.document_id, doc.title, c.ordinal, c.text, c.start_offset, c.end_offset,
       f.dense_rank, f.dense_score, f.keyword_rank, f.keyword_score, f.fused_score,
       1 - (c.embedding <=> %(qvec)s::vector) AS cosine
FROM fused f
JOIN documents_chunk c ON c.id = f.id AND c.workspace_id = %(workspace)s
JOIN documents_document doc ON doc.id = c.document_id AND doc.workspace_id = %(workspace)s
ORDER BY f.fused_score DESC, f.id
"""


def hybrid_search(cursor, *, workspace_id, question: str, query_vector, params: RetrievalParams) -> list[Candidate]:
    """Run inside a transaction: the HNSW setting is SET LOCAL so that it ends with it."""
    cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef_search_for(params))])
    cursor.execute(
        HYBRID_SQL,
        {
            "workspace": str(workspace_id),
            "qvec": vector_literal(query_vector),
            "question": question,
            "dense_k": params.dense_k,
            "keyword_k": params.keyword_k,
            "rrf_k": float(params.rrf_k),
            "dense_weight": params.dense_weight,
            "keyword_weight": params.keyword_weight,
        },
    )
    return [_candidate(row) for row in cursor.fetchall()]


def _candidate(row) -> Candidate:
    chunk_id, document_id, title, ordinal, text, start, end, d_rank, d_score, k_rank, k_score, fused, cosine = row
    return Candidate(
        chunk_id=str(chunk_id),
        document_id=str(document_id),
        document_title=title,
        ordinal=ordinal,
        text=text,
        start=start,
        end=end,
        dense_rank=d_rank,
        dense_score=None if d_score is None else float(d_score),
        keyword_rank=k_rank,
        keyword_score=None if k_score is None else float(k_score),
        fused_score=float(fused),
        cosine=float(cosine),
    )


UNIT_VECTORS_COPY = "COPY documents_unitvectors (id, workspace_id, created_at, document_id, ordinal, vectors) FROM STDIN (FORMAT BINARY)"


def unit_vectors_write(cursor, *, workspace_id, document_id, rows, now) -> None:
    """Replace a document's stored unit vectors with `rows` ((ordinal, float16 bytes) per chunk):
    one DELETE and one COPY, in the caller's transaction."""
    import uuid

    cursor.execute("DELETE FROM documents_unitvectors WHERE workspace_id = %s AND document_id = %s", [str(workspace_id), str(document_id)])
    with cursor.copy(UNIT_VECTORS_COPY) as copy:
        copy.set_types(["uuid", "uuid", "timestamptz", "uuid", "int4", "bytea"])
        for ordinal, vectors in rows:
            copy.write_row((uuid.uuid4(), workspace_id, now, document_id, ordinal, vectors))
