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
    # The least candidate list of the workspace's own HNSW index; deeper legs get more (apps/documents/sql.py, ef_search_for).
    ef_search: int = 100


def vector_literal(vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
