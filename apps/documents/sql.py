"""The SQL beside its tables: BM25 statistics and chunk vectors kept at ingestion, and the one
hybrid statement that retrieves (both legs scoped to the workspace, fused by weighted RRF).
The maths and its parameters are apps/pipeline/bm25.py and apps/pipeline/retrieval.py."""

from __future__ import annotations

from apps.pipeline.bm25 import CANDIDATE_MAX_DF_SHARE, K1, LEXEME_DIMENSIONS, B
from apps.pipeline.retrieval import EF_MAX, EF_PER_ROW, RetrievalParams, vector_literal
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
    WHERE c.workspace_id = %(workspace)s AND c.document_id = %(document)s
    GROUP BY u.lexeme
"""

ADD_DOCUMENT_STATS = f"""
INSERT INTO documents_termstat (workspace_id, lexeme, df)
SELECT %(workspace)s, lexeme, df FROM ({_DOCUMENT_TERMS}) t
ON CONFLICT (workspace_id, lexeme) DO UPDATE SET df = documents_termstat.df + EXCLUDED.df;
UPDATE documents_indexstat s SET chunk_count = s.chunk_count + d.n, token_total = s.token_total + d.tokens
FROM (SELECT count(*) AS n, coalesce(sum(token_count), 0) AS tokens FROM documents_chunk
      WHERE workspace_id = %(workspace)s AND document_id = %(document)s) d
WHERE s.workspace_id = %(workspace)s;
"""

REMOVE_DOCUMENT_STATS = f"""
UPDATE documents_termstat s SET df = s.df - t.df
FROM ({_DOCUMENT_TERMS}) t
WHERE s.workspace_id = %(workspace)s AND s.lexeme = t.lexeme;
DELETE FROM documents_termstat WHERE workspace_id = %(workspace)s AND df = 0;
UPDATE documents_indexstat s SET chunk_count = s.chunk_count - d.n, token_total = s.token_total - d.tokens
FROM (SELECT count(*) AS n, coalesce(sum(token_count), 0) AS tokens FROM documents_chunk
      WHERE workspace_id = %(workspace)s AND document_id = %(document)s) d
WHERE s.workspace_id = %(workspace)s;
"""

SET_TOKEN_COUNTS = """
UPDATE documents_chunk c
SET token_count = (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(c.search_vector) AS u)
WHERE c.workspace_id = %(workspace)s AND c.document_id = %(document)s
"""

SET_CHUNK_VECTORS = f"""
UPDATE documents_chunk c
SET bm25 = (
    SELECT ('{{' || coalesce(string_agg(w.dim || ':' || w.weight, ',' ORDER BY w.dim), '') || '}}/{LEXEME_DIMENSIONS}')::sparsevec
    FROM (
        SELECT trustrag_lexeme_dim(u.lexeme) AS dim,
               sum(cardinality(u.positions) * ({K1} + 1)
                   / (cardinality(u.positions) + {K1} * (1 - {B} + {B} * c.token_count / greatest(s.token_total::float8 / greatest(s.chunk_count, 1), 1)))) AS weight
        FROM unnest(c.search_vector) AS u
        GROUP BY 1
    ) w
)
FROM documents_indexstat s
WHERE s.workspace_id = c.workspace_id AND c.workspace_id = %(workspace)s AND c.document_id = %(document)s
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
    """Take a document's chunks out of the statistics (before they are deleted)."""
    _run(cursor, LOCK_STATS + REMOVE_DOCUMENT_STATS, workspace_id, document_id)


def index_document(cursor, *, workspace_id, document_id) -> None:
    """Count a document's freshly written chunks in, then give each its BM25 vector."""
    _run(cursor, LOCK_STATS + SET_TOKEN_COUNTS + ";\n" + ADD_DOCUMENT_STATS + SET_CHUNK_VECTORS, workspace_id, document_id)


def _run(cursor, script: str, workspace_id, document_id) -> None:
    params = {"workspace": str(workspace_id), "document": str(document_id)}
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


SCAN_SETTINGS_SQL = """
SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search', least(%(ef_max)s, greatest(%(ef_search)s,
           ceil(%(depth)s * greatest(t.reltuples, 1) / greatest(s.chunk_count, 1))))::int::text, true)
FROM pg_class t LEFT JOIN documents_indexstat s ON s.workspace_id = %(workspace)s
WHERE t.oid = 'documents_chunk'::regclass
"""


def hybrid_search(cursor, *, workspace_id, question: str, query_vector, params: RetrievalParams) -> list[Candidate]:
    """Run inside a transaction: the HNSW settings are SET LOCAL so they end with it."""
    cursor.execute(
        SCAN_SETTINGS_SQL,
        {"workspace": str(workspace_id), "ef_search": params.ef_search, "depth": EF_PER_ROW * params.dense_k, "ef_max": EF_MAX},
    )
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
