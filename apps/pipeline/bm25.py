"""BM25 inside Postgres: the scoring maths and its parameters (the SQL is apps/documents/sql.py).

Each chunk stores a pgvector `sparsevec` whose dimension per lexeme (an md5 slice,
the same function in SQL at index and query time) holds the lexeme's saturated,
length-normalised term frequency:

    w(t, c) = tf · (k1 + 1) / (tf + k1 · (1 − b + b · |c| / avgdl))

The query vector holds each query lexeme's IDF from the workspace's document
frequencies, so `bm25 <#> query` is minus the BM25 score, computed in C for the
candidates the GIN index finds. avgdl is the workspace's at indexing time;
chunks are of bounded length, so it moves little, and re-indexing refreshes it.

Term frequencies and lengths come from the same `to_tsvector` (english
configuration: stemmed, stop words removed) as the generated `search_vector`, so
keyword search and BM25 agree; they are computed as a chunk is written, in the one
statement that writes it, so no chunk is updated after it is written.
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
