"""BM25 inside Postgres: the SQL that keeps the statistics and the chunk vectors.

Each chunk stores a pgvector `sparsevec` whose dimension per lexeme (an md5 slice,
the same function in SQL at index and query time) holds the lexeme's saturated,
length-normalised term frequency:

    w(t, c) = tf · (k1 + 1) / (tf + k1 · (1 − b + b · |c| / avgdl))

The query vector holds each query lexeme's IDF from the workspace's document
frequencies, so `bm25 <#> query` is minus the BM25 score, computed in C for the
candidates the GIN index finds. avgdl is the workspace's at indexing time;
chunks are of bounded length, so it moves little, and re-indexing refreshes it.

Term frequencies and lengths come from the generated `tsvector` (english
configuration: stemmed, stop words removed), so keyword search and BM25 agree.
"""

from __future__ import annotations

# k1 and b as measured best on SciFact train judgments (nDCG@10 0.682 against 0.677
# for the textbook 1.2 / 0.75); changing them needs a re-index.
K1 = 0.9
B = 0.4
LEXEME_DIMENSIONS = 2**28 + 1
# Query terms in more than this share of a workspace's chunks only score, they do
# not nominate candidates: the GIN scan stays small and the ranking is unchanged.
CANDIDATE_MAX_DF_SHARE = 0.1

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
