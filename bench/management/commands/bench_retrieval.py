"""Retrieval quality and latency of the product's own ingestion and hybrid SQL on a BEIR data set.

The corpus goes in through the real upload and ingestion services (extraction, sentence-aware
chunking with the workspace's settings, batched embedding, chunk writes); every judged query runs
through the product's retrieval SQL (`chunk_search`) once per mode. Documents are ranked by their best chunk. See
BENCHMARKS.md for the fixed interface.
"""

from __future__ import annotations

import csv
import math
import time
from collections import defaultdict
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.documents.models import Chunk
from apps.documents.selectors import chunk_search
from apps.pipeline.answer import recall_stored_units
from apps.pipeline.embedding import product_embedder
from apps.pipeline.rerank import get_reranker
from apps.pipeline.retrieval import RetrievalParams
from apps.workspaces.models import WorkspaceSettings
from apps.workspaces.selectors import settings_get
from bench.common import data_path, emit, ingest_records, percentile, progress, read_jsonl, record_id, temporary_workspace

MODES = ("dense", "keyword", "hybrid", "reranked")
# The reranked mode reorders the top of the hybrid list, as the product does with its
# 10 + 10 candidates; the rest keeps its hybrid order (for recall@100).
RERANK_DEPTH = 20
DEPTH = 100
PROGRESS_EVERY = 250


def ndcg_at_k(ranking: list[str], judgments: dict[str, float], k: int = 10) -> float:
    """Graded nDCG: gain = qrels score, discount 1/log2(rank + 1); the ideal ranks every judged doc."""
    gains = sorted((score for score in judgments.values() if score > 0), reverse=True)
    ideal = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains[:k], start=1))
    if ideal == 0:
        return 0.0
    actual = sum(judgments.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranking[:k], start=1) if judgments.get(doc, 0) > 0)
    return actual / ideal


def recall_at_k(ranking: list[str], relevant: set[str], k: int = DEPTH) -> float:
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: list[str], relevant: set[str], k: int = 10) -> float:
    for rank, doc in enumerate(ranking[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def mode_params(mode: str, options: WorkspaceSettings) -> RetrievalParams:
    dense_k, keyword_k = {"dense": (DEPTH, 0), "keyword": (0, DEPTH), "hybrid": (DEPTH, DEPTH), "reranked": (DEPTH, DEPTH)}[mode]
    return RetrievalParams(
        dense_k=dense_k,
        keyword_k=keyword_k,
        rrf_k=options.rrf_k,
        dense_weight=options.dense_weight,
        keyword_weight=options.keyword_weight,
    )


def rank_documents(candidates, corpus_ids_of: dict[str, list[str]]) -> list[str]:
    """Corpus ids in the order of each document's best (first) chunk in the fused list.

    A document that stands for several corpus ids (identical texts) contributes them all, in turn.
    """
    seen_documents: set[str] = set()
    ranking: dict[str, None] = {}
    for candidate in candidates:
        if candidate.document_id in seen_documents:
            continue
        seen_documents.add(candidate.document_id)
        ranking.update(dict.fromkeys(corpus_ids_of.get(candidate.document_id, ())))
    return list(ranking)


def read_qrels(path: str | Path) -> dict[str, dict[str, float]]:
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    with open(path, encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        next(rows, None)  # header line
        for row in rows:
            if len(row) < 3 or not row[0].strip():
                continue
            qrels[row[0].strip()][row[1].strip()] = float(row[2])
    return dict(qrels)


class Command(BaseCommand):
    help = "Benchmark dense, keyword, hybrid and reranked retrieval on a BEIR corpus/queries/qrels through the product's ingestion and SQL."

    def add_arguments(self, parser):
        defaults = WorkspaceSettings._meta
        parser.add_argument("--corpus", default=str(data_path("scifact", "corpus.jsonl.gz")), help="JSONL(.gz) of {id|_id, title, text}")
        parser.add_argument("--queries", default=str(data_path("scifact", "queries.jsonl")), help="JSONL of {_id, text}")
        parser.add_argument(
            "--qrels", default=str(data_path("scifact", "qrels", "train.tsv")), help="TSV with a header: query-id, corpus-id, score"
        )
        parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: dense, keyword, hybrid, reranked")
        parser.add_argument("--json", dest="json_path", default=None, help="also write the result line to this file")
        parser.add_argument("--chunk-size", type=int, default=defaults.get_field("chunk_size").default)
        parser.add_argument("--chunk-overlap", type=int, default=defaults.get_field("chunk_overlap").default)
        parser.add_argument("--limit-queries", type=int, default=None, help="only the first N judged queries (quick runs)")

    def handle(self, *args, corpus, queries, qrels, modes, json_path, chunk_size, chunk_overlap, limit_queries, **options):
        wanted = _parse_modes(modes)
        if chunk_size < 1 or chunk_overlap < 0 or chunk_overlap >= chunk_size:
            raise CommandError(f"Need chunk_size ≥ 1 and 0 ≤ chunk_overlap < chunk_size (got {chunk_size}/{chunk_overlap}).")
        for path in (corpus, queries, qrels):
            if not Path(path).is_file():
                raise CommandError(f"{path} does not exist.")

        try:
            records = list(read_jsonl(corpus))
            judged = _judged_queries(queries, read_qrels(qrels), limit_queries)
        except (ValueError, OSError) as exc:  # JSONDecodeError is a ValueError, as is a qrels score that is not a number
            raise CommandError(f"Cannot read the input: {exc}") from exc
        if not records:
            raise CommandError(f"{corpus} holds no records.")
        if not judged:
            raise CommandError("No query has a relevant judgment (score > 0) in the qrels.")
        progress(
            f"bench_retrieval: {len(records)} docs, {len(judged)} judged queries, modes {', '.join(wanted)}, chunks {chunk_size}/{chunk_overlap}"
        )

        with temporary_workspace("retrieval") as workspace:
            workspace_options = settings_get(workspace=workspace)
            workspace_options.chunk_size, workspace_options.chunk_overlap = chunk_size, chunk_overlap
            workspace_options.save(update_fields=["chunk_size", "chunk_overlap", "updated_at"])

            started = time.perf_counter()
            corpus_ids_of = ingest_records(workspace, records)
            ingest_seconds = time.perf_counter() - started
            n_chunks = Chunk.objects.filter(workspace=workspace).count()
            progress(f"ingested {len(records)} docs into {n_chunks} chunks in {ingest_seconds:.1f} s")

            results, embed_ms = self._run_queries(workspace, settings_get(workspace=workspace), judged, wanted, corpus_ids_of)

        emit(
            {
                "n_docs": len(records),
                "n_queries": len(judged),
                "ingest_seconds": round(ingest_seconds, 4),
                "modes": results,
                "chunk_size": chunk_size,
                "chunk_overlap": chunk_overlap,
                "n_chunks": n_chunks,
                "embed_p50_ms": round(percentile(embed_ms, 50), 4),
            },
            json_path,
        )

    def _run_queries(self, workspace, options, judged, wanted, corpus_ids_of):
        embedder = product_embedder()
        reranker = get_reranker(settings.RERANKER_MODEL, embedder)
        params = {mode: mode_params(mode, options) for mode in wanted}
        scores = {mode: {"ndcg@10": [], "recall@100": [], "mrr@10": [], "ms": []} for mode in wanted}
        embed_ms: list[float] = []
        started = time.perf_counter()
        for done, (question, judgments) in enumerate(judged, start=1):
            relevant = {doc for doc, score in judgments.items() if score > 0}
            t0 = time.perf_counter()
            query_vector = embedder.embed([question])[0]
            embed_ms.append((time.perf_counter() - t0) * 1000)
            for mode in wanted:
                t0 = time.perf_counter()
                candidates = chunk_search(workspace=workspace, question=question, query_vector=query_vector, params=params[mode])
                if mode == "reranked":
                    candidates = _reranked(reranker, embedder, question, query_vector, candidates)
                scores[mode]["ms"].append((time.perf_counter() - t0) * 1000)
                ranking = rank_documents(candidates, corpus_ids_of)
                scores[mode]["ndcg@10"].append(ndcg_at_k(ranking, judgments, 10))
                scores[mode]["recall@100"].append(recall_at_k(ranking, relevant, DEPTH))
                scores[mode]["mrr@10"].append(mrr_at_k(ranking, relevant, 10))
            if done % PROGRESS_EVERY == 0 or done == len(judged):
                elapsed = time.perf_counter() - started
                progress(f"queries {done}/{len(judged)}, {done / elapsed:.1f} queries/s")
        results = {}
        for mode in wanted:
            s = scores[mode]
            results[mode] = {
                "ndcg@10": round(_mean(s["ndcg@10"]), 4),
                "recall@100": round(_mean(s["recall@100"]), 4),
                "mrr@10": round(_mean(s["mrr@10"]), 4),
                "p50_ms": round(percentile(s["ms"], 50), 4),
                "p95_ms": round(percentile(s["ms"], 95), 4),
            }
        return results, embed_ms


def _parse_modes(raw: str) -> list[str]:
    modes = list(dict.fromkeys(m.strip().lower() for m in raw.split(",") if m.strip()))
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise CommandError(f"Unknown mode(s) {', '.join(unknown) or '(none given)'}; available modes: {', '.join(MODES)}")
    return modes


def _judged_queries(queries_path, qrels: dict[str, dict[str, float]], limit: int | None) -> list[tuple[str, dict[str, float]]]:
    """(question, judgments) for every query with at least one relevant judgment, in the queries file's order."""
    judged, seen = [], set()
    for record in read_jsonl(queries_path):
        query_id = record_id(record)
        seen.add(query_id)
        judgments = qrels.get(query_id, {})
        question = " ".join(str(record.get("text") or "").split())
        if question and any(score > 0 for score in judgments.values()):
            judged.append((question, judgments))
    missing = {q for q, j in qrels.items() if any(s > 0 for s in j.values())} - seen
    if missing:
        progress(f"warning: {len(missing)} judged query id(s) are not in the queries file")
    return judged[:limit] if limit is not None else judged


def _reranked(reranker, embedder, question: str, query_vector, candidates: list) -> list:
    """As the product reranks: the passages' unit vectors stored at ingestion handed to the
    embedder first, so only the question was embedded."""
    recall_stored_units(candidates[:RERANK_DEPTH], embedder)
    head = reranker.rerank(question, query_vector, candidates[:RERANK_DEPTH])
    return [s.candidate for s in head] + candidates[RERANK_DEPTH:]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
