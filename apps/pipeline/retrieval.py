"""Hybrid retrieval's parameters: both legs scoped to the workspace, fused by weighted RRF
(the one SQL statement that runs them is apps/documents/sql.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetrievalParams:
    dense_k: int = 10
    keyword_k: int = 10
    rrf_k: int = 60
    dense_weight: float = 1.0
    keyword_weight: float = 1.0
    # The least candidate list of the workspace's own HNSW index; deeper legs get more (ef_search_for).
    ef_search: int = 100


# pgvector's HNSW scan hands back at most ef_search rows, and finds the true nearest k only with a
# candidate list a few times k: the list is at least EF_PER_ROW a row asked for, within pgvector's
# limit of 1,000 (a workspace's dense_k goes up to 200). At the product's dense_k of 10 that is the
# default of 100; at bench_retrieval's depth of 100 it is 400, as the 0.726 reranked nDCG@10 of
# session 6 was measured with.
EF_PER_ROW = 4
EF_MAX = 1000


def ef_search_for(params: RetrievalParams) -> int:
    return min(EF_MAX, max(params.ef_search, EF_PER_ROW * params.dense_k))


def vector_literal(vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
