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
    ef_search: int = 100


# The dense leg's HNSW scan meets the workspace filter after the index: to hand back dense_k of
# the workspace's rows it walks about dense_k / share of the whole table's nearest rows, share
# being the workspace's part of the table. Recall at that depth needs a candidate list
# (ef_search) of a few rows per row walked (measured on a tenth of 100,000 chunks: recall@10
# 0.85 at ef_search 100, 0.96 at 400). pgvector takes at most 1,000.
EF_PER_ROW = 4
EF_MAX = 1000


def vector_literal(vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
