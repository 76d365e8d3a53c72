"""The embedder's forward pass, backend by backend: how fast each embeds a BEIR corpus and how well
its vectors rank the judged documents (dense retrieval of whole records by cosine, nDCG@10), and
how close its vectors come to the first backend's. No database and no chunking: the backends
differ only in the forward pass, so this isolates it; bench_retrieval measures the product end to
end."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.pipeline.embedding import Embedder, default_model_path, set_torch_threads
from apps.pipeline.onnx_embedding import BACKENDS
from bench.common import data_path, document_text, emit, progress, read_jsonl, record_id
from bench.management.commands.bench_retrieval import _judged_queries, ndcg_at_k, read_qrels


class Command(BaseCommand):
    help = "Compare the embedder's backends (torch, onnx, onnx-int8) by speed and dense nDCG@10 on a BEIR corpus."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", default=str(data_path("scifact", "corpus.jsonl.gz")))
        parser.add_argument("--queries", default=str(data_path("scifact", "queries.jsonl")))
        parser.add_argument("--qrels", default=str(data_path("scifact", "qrels", "train.tsv")))
        parser.add_argument(
            "--backends", default=",".join(BACKENDS), help=f"comma-separated, the first is the reference: {', '.join(BACKENDS)}"
        )
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--limit", type=int, default=None, help="only the first N records (quick runs)")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, corpus, queries, qrels, backends, threads, limit, json_path, **options):
        wanted = [b.strip() for b in backends.split(",") if b.strip()]
        if not wanted or any(b not in BACKENDS for b in wanted):
            raise CommandError(f"--backends takes {', '.join(BACKENDS)}; got {backends!r}.")
        for path in (corpus, queries, qrels):
            if not Path(path).is_file():
                raise CommandError(f"{path} does not exist.")
        records = list(read_jsonl(corpus))[:limit]
        ids = [record_id(r) for r in records]
        texts = [document_text(r) for r in records]
        known = set(ids)
        judged = [(q, j) for q, j in _judged_queries(queries, read_qrels(qrels), None) if known & set(j)]
        set_torch_threads(threads)
        result, reference = {"records": len(texts), "queries": len(judged), "threads": threads, "backends": {}}, None
        export_dir = Path(settings.VAR_DIR) / "models"  # the product's exports, made once and shared
        for backend in wanted:
            embedder = Embedder(default_model_path(), backend=backend, export_dir=export_dir)
            embedder.embed(["warm up: load, and export where needed"])
            started = time.perf_counter()
            vectors = embedder.embed(texts)
            seconds = time.perf_counter() - started
            asked = embedder.embed([q for q, _ in judged])
            order = np.argsort(-(asked @ vectors.T), axis=1)[:, :10]
            ndcg = float(np.mean([ndcg_at_k([ids[i] for i in row], j) for row, (_, j) in zip(order, judged, strict=True)]))
            reference = vectors if reference is None else reference
            cosine = (vectors * reference).sum(axis=1)
            result["backends"][backend] = {
                "seconds": round(seconds, 1),
                "records_per_s": round(len(texts) / seconds, 1),
                "ndcg_at_10": round(ndcg, 4),
                "cosine_to_first": {"min": round(float(cosine.min()), 4), "mean": round(float(cosine.mean()), 5)},
            }
            progress(f"{backend}: {result['backends'][backend]}")
        emit(result, json_path, self.stdout)
