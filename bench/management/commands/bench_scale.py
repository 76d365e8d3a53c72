"""Hybrid retrieval at scale against the original design's in-process retrieval, in one run.

W temporary workspaces get N chunks in all (see bench.scale for how the texts and vectors
are made), written through the product's bulk chunk writer (`document_chunks_write_many`: one
COPY and one INSERT per batch, token counts and BM25 vectors computed on the way in); then Q real
SciFact questions, each scoped to one workspace, run through the product's retrieval SQL
(`chunk_search`). The baseline answers the same questions over the same texts and vectors in the
same run, timed before the writes and freed before the product's timing, so that the memory its
in-process indexes held is the database's page cache again, as on a machine that serves.

`write_seconds` is the wall time of the writes (rows, their HNSW, GIN and btree index entries,
BM25 statistics and vectors) plus the VACUUM (ANALYZE) and CHECKPOINT that settle them after the
load; `index_build_seconds` is that settling part. The product builds no index over loaded rows:
each workspace's own HNSW index is made (empty) by the writer before the workspace's first chunk
and filled as rows arrive, and the keyword GIN index serves every workspace. See BENCHMARKS.md for the
fixed interface.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection, transaction

from apps.documents.models import Chunk, Document, DocumentStatus, IndexStat
from apps.documents.selectors import chunk_search
from apps.documents.services import ChunkWrite, document_chunks_write_many
from apps.pipeline.embedding import product_embedder
from apps.pipeline.retrieval import RetrievalParams
from apps.workspaces.models import WorkspaceSettings
from bench.common import data_path, emit, percentile, progress, read_jsonl, temporary_workspace
from bench.scale import VECTOR_METHOD, Baseline, ScaledCorpus, build_corpus, embed_in_batches

REQUIREMENTS = "bench/requirements.txt"
WARMUP = 5
PROGRESS_EVERY = 50
WRITE_PROGRESS_EVERY = 10000
WRITE_BATCH_CHUNKS = 2000
# Two writers, as the two-core machine's two ingestion worker threads (`make run`) would.
WRITERS = 2
RECALL_K = 10


def _default_data_dir() -> Path:
    return data_path("scifact")


class Command(BaseCommand):
    help = "Time hybrid retrieval over N chunks in W workspaces against the original in-process rank_bm25 + faiss design."

    def add_arguments(self, parser):
        data = _default_data_dir()
        parser.add_argument("--chunks", type=int, required=True, help="chunks in all workspaces together")
        parser.add_argument("--workspaces", type=int, required=True)
        parser.add_argument("--queries", type=int, required=True, help="timed questions, each in one workspace")
        parser.add_argument("--json", dest="json_path", default=None, help="also write the result line to this file")
        parser.add_argument("--corpus", default=str(data / "corpus.jsonl.gz"), help="BEIR corpus JSONL(.gz) the texts come from")
        parser.add_argument("--questions", default=str(data / "queries.jsonl"), help="BEIR queries JSONL the questions come from")

    def handle(self, *args, chunks, workspaces, queries, json_path, corpus, questions, **options):
        _check_arguments(chunks, workspaces, queries, corpus, questions)
        _require_baseline_libraries()
        defaults = WorkspaceSettings._meta
        size, overlap = defaults.get_field("chunk_size").default, defaults.get_field("chunk_overlap").default
        embedder = product_embedder()
        records = list(read_jsonl(corpus))
        progress(f"bench_scale: {chunks} chunks in {workspaces} workspaces, {queries} queries; chunks {size}/{overlap}")

        scaled = build_corpus(
            records, chunks=chunks, workspaces=workspaces, size=size, overlap=overlap, embed=embedder.embed, report=progress
        )
        asked = _questions(questions, queries)
        vectors = embed_in_batches(embedder.embed, asked, lambda message: None)
        counts = {"real": scaled.count(real=True), "derived": scaled.count(real=False)}
        # The baseline is timed first, on the same questions, texts and vectors, and then freed:
        # its in-process indexes (rank_bm25's per-chunk term counts above all) take several GB at a
        # million chunks, memory that a machine serving TrustRAG gives the database's page cache.
        baseline_ms = _time_baseline(
            scaled, asked, vectors, dense_k=defaults.get_field("dense_k").default, keyword_k=defaults.get_field("keyword_k").default
        )
        with ExitStack() as cleanup:
            spaces = [cleanup.enter_context(temporary_workspace("scale")) for _ in range(workspaces)]
            write_seconds = _write(spaces, scaled)
            # This process's own copy of the corpus (its texts, vectors and documents, some 3 GB at
            # a million chunks) is not needed once written: freed before the timing, for the same
            # reason as the baseline.
            del scaled
            _release_memory()
            settle_seconds = _settle()
            stored = _check_stored(spaces, chunks)
            measured = _measure(spaces, asked, vectors) | {"baseline": baseline_ms}
            progress("removing the benchmark workspaces")

        emit(
            {
                "chunks": stored,
                "workspaces": workspaces,
                "queries": len(asked),
                "vectors": counts | {"method": VECTOR_METHOD},
                "hybrid_p50_ms": round(percentile(measured["hybrid"], 50), 3),
                "hybrid_p95_ms": round(percentile(measured["hybrid"], 95), 3),
                "hnsw_recall@10": round(sum(measured["recall"]) / len(measured["recall"]), 4),
                "baseline_p50_ms": round(percentile(measured["baseline"], 50), 3),
                "baseline_p95_ms": round(percentile(measured["baseline"], 95), 3),
                "speedup_p50": round(percentile(measured["baseline"], 50) / percentile(measured["hybrid"], 50), 2),
                "index_build_seconds": round(settle_seconds, 2),
                "write_seconds": round(write_seconds + settle_seconds, 2),
            },
            json_path,
            self.stdout,
        )


def _check_arguments(chunks: int, workspaces: int, queries: int, corpus: str, questions: str) -> None:
    if workspaces < 1 or queries < 1:
        raise CommandError(f"Need at least one workspace and one query (got --workspaces {workspaces}, --queries {queries}).")
    if chunks < workspaces:
        raise CommandError(f"Need at least one chunk per workspace (got --chunks {chunks} for {workspaces} workspaces).")
    for path in (corpus, questions):
        if not Path(path).is_file():
            raise CommandError(f"{path} does not exist.")


def _require_baseline_libraries() -> None:
    missing = []
    for package, module in (("rank-bm25", "rank_bm25"), ("faiss-cpu", "faiss")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise CommandError(
            f"bench_scale's baseline needs {' and '.join(missing)}, benchmark-only dependencies listed in {REQUIREMENTS}: "
            f"run `.venv/bin/pip install -r {REQUIREMENTS}`."
        )


def _questions(path: str, count: int) -> list[str]:
    """`count` real questions in a fixed random order (repeated when the file has fewer)."""
    texts = [" ".join(str(r.get("text") or "").split()) for r in read_jsonl(path)]
    texts = [t for t in texts if t]
    if not texts:
        raise CommandError(f"{path} holds no question.")
    order = np.random.default_rng(7).permutation(len(texts))
    return [texts[order[i % len(texts)]] for i in range(count)]


def _time_baseline(scaled: ScaledCorpus, asked: list[str], vectors: np.ndarray, *, dense_k: int, keyword_k: int) -> list[float]:
    """Build the baseline over every chunk, time each question in its workspace (question i in
    workspace i mod W, as _measure asks it), then free it. Milliseconds per question."""
    documents = scaled.workspaces
    texts = [d.text for docs in documents for doc in docs for d in doc.drafts]
    chunk_vectors = np.concatenate([doc.vectors for docs in documents for doc in docs])
    workspace_of = np.concatenate([np.full(len(doc.drafts), w) for w, docs in enumerate(documents) for doc in docs])
    started = time.perf_counter()
    baseline = Baseline(texts, chunk_vectors, workspace_of, dense_k=dense_k, keyword_k=keyword_k)
    progress(f"baseline: BM25Okapi + IndexFlatL2 over {len(texts)} chunks built in {time.perf_counter() - started:.1f} s")
    del chunk_vectors  # faiss keeps a copy of its own
    spaces = len(documents)
    for i in range(min(WARMUP, len(asked))):
        baseline.search(asked[i], vectors[i], i % spaces)
    timed = []
    for i, (question, vector) in enumerate(zip(asked, vectors, strict=True)):
        started = time.perf_counter()
        baseline.search(question, vector, i % spaces)
        timed.append((time.perf_counter() - started) * 1000)
        if (i + 1) % PROGRESS_EVERY == 0 or i + 1 == len(asked):
            progress(f"baseline queries {i + 1}/{len(asked)}: p50 {percentile(timed, 50):.1f} ms")
    del baseline
    _release_memory()
    return timed


def _release_memory() -> None:
    """Collect what was freed and hand the emptied heap back to the OS (glibc's malloc_trim), so
    that the process's resident size falls with it."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: the memory stays with the process until reused
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _write(spaces, scaled: ScaledCorpus) -> float:
    """Every chunk through the product's bulk writer, by WRITERS writers at once (each with its own
    database connection, as that many ingestion workers would): each workspace belongs to one
    writer and goes in its document order, in batches of about WRITE_BATCH_CHUNKS chunks, a
    writer's workspaces taking turns batch by batch. The seconds it took to write the rows with
    every index entry and statistic."""
    pending = {}
    for workspace, documents in zip(spaces, scaled.workspaces, strict=True):
        rows = Document.objects.bulk_create(
            [
                Document(
                    workspace=workspace,
                    title=doc.name.removesuffix(".txt"),
                    filename=doc.name,
                    size_bytes=len(doc.extracted.text.encode("utf-8")),
                    sha256=doc.sha256,
                    status=DocumentStatus.PROCESSING,
                )
                for doc in documents
            ],
            batch_size=1000,
        )
        pending.update({id(doc): row for doc, row in zip(documents, rows, strict=True)})
    lanes = [_batches(spaces[w::WRITERS], scaled.workspaces[w::WRITERS], pending) for w in range(min(WRITERS, len(spaces)))]
    meter = _WriteMeter(scaled.count(real=True) + scaled.count(real=False))
    stop = threading.Event()
    with ThreadPoolExecutor(len(lanes)) as pool:
        futures = [pool.submit(_write_lane, lane, meter, stop) for lane in lanes]
        try:
            for future in as_completed(futures):
                future.result()
        except BaseException:
            stop.set()  # a failed writer or a SIGTERM: the others stop after their current batch
            raise
    progress(f"wrote {meter.written} chunks with {len(lanes)} writer(s) in {meter.elapsed():.1f} s")
    return meter.elapsed()


def _batches(spaces, documents_by_space, pending) -> list[tuple]:
    """(workspace, writes) pairs: each workspace's documents cut into runs of about
    WRITE_BATCH_CHUNKS chunks, then the workspaces' runs taken in turn."""
    runs = []
    for workspace, documents in zip(spaces, documents_by_space, strict=True):
        mine, current, size = [], [], 0
        for doc in documents:
            current.append(ChunkWrite(pending[id(doc)], doc.extracted, doc.drafts, doc.vectors))
            size += len(doc.drafts)
            if size >= WRITE_BATCH_CHUNKS:
                mine.append((workspace, current))
                current, size = [], 0
        if current:
            mine.append((workspace, current))
        runs.append(mine)
    longest = max(len(mine) for mine in runs)
    return [mine[i] for i in range(longest) for mine in runs if i < len(mine)]


def _write_lane(batches: list[tuple], meter: _WriteMeter, stop: threading.Event) -> None:
    try:
        for workspace, writes in batches:
            if stop.is_set():
                return
            meter.add(document_chunks_write_many(workspace=workspace, writes=writes))
    finally:
        connection.close()  # this thread's own connection


class _WriteMeter:
    """Chunks written so far by all writers, with a progress line every WRITE_PROGRESS_EVERY."""

    def __init__(self, total: int):
        self.total, self.written, self.started = total, 0, time.perf_counter()
        self.lock = threading.Lock()

    def add(self, count: int) -> None:
        with self.lock:
            before, self.written = self.written, self.written + count
            if before == 0 or before // WRITE_PROGRESS_EVERY < self.written // WRITE_PROGRESS_EVERY:
                progress(f"wrote {self.written}/{self.total} chunks, {self.written / self.elapsed():.0f} chunks/s")

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def _check_stored(spaces, expected: int) -> int:
    stored = Chunk.objects.filter(workspace__in=spaces).count()
    counted = sum(IndexStat.objects.filter(workspace__in=spaces).values_list("chunk_count", flat=True))
    if stored != expected or counted != expected:
        raise CommandError(f"Wrote {stored} chunks ({counted} in the BM25 statistics), expected {expected}.")
    return stored


def _settle() -> float:
    """What the server would do soon after a bulk load, done now so that it does not run during the
    timing, and counted in the writes: autovacuum's merge of the GIN index's pending list (every
    keyword query scans it) and its refresh of the planner's statistics; the checkpointer's flush
    of the gigabytes of pages the load dirtied (left to itself, it writes them out over the next
    minutes, beside the queries' reads). CHECKPOINT needs a superuser or pg_checkpoint: without,
    the flush is left to the server and the output says so."""
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) documents_chunk")
        try:
            with transaction.atomic():
                cursor.execute("CHECKPOINT")
            flushed = "checkpointed"
        except DatabaseError as exc:
            flushed = f"not checkpointed ({str(exc).strip()})"
    seconds = time.perf_counter() - started
    progress(f"vacuumed and analysed the chunk table, {flushed}, in {seconds:.1f} s")
    return seconds


def _measure(spaces, asked: list[str], vectors: np.ndarray) -> dict[str, list[float]]:
    """Each question in one workspace, in turn: the product's hybrid query is timed; the dense
    leg's HNSW top 10 is compared with the exact top 10 (not timed)."""
    defaults = WorkspaceSettings._meta
    params = RetrievalParams(
        **{name: defaults.get_field(name).default for name in ("dense_k", "keyword_k", "rrf_k", "dense_weight", "keyword_weight")}
    )
    dense_only = replace(params, dense_k=RECALL_K, keyword_k=0)
    for i in range(min(WARMUP, len(asked))):
        _hybrid(spaces[i % len(spaces)], asked[i], vectors[i], params)
    measured: dict[str, list[float]] = {"hybrid": [], "recall": []}
    for i, (question, vector) in enumerate(zip(asked, vectors, strict=True)):
        w = i % len(spaces)
        started = time.perf_counter()
        _hybrid(spaces[w], question, vector, params)
        measured["hybrid"].append((time.perf_counter() - started) * 1000)
        approximate = {c.chunk_id for c in _hybrid(spaces[w], question, vector, dense_only)}
        exact = {c.chunk_id for c in _hybrid(spaces[w], question, vector, dense_only, exact=True)}
        measured["recall"].append(len(approximate & exact) / len(exact) if exact else 1.0)
        if (i + 1) % PROGRESS_EVERY == 0 or i + 1 == len(asked):
            progress(
                f"queries {i + 1}/{len(asked)}: hybrid p50 {percentile(measured['hybrid'], 50):.1f} ms, "
                f"recall@10 {np.mean(measured['recall']):.3f}"
            )
    slowest = sorted(range(len(asked)), key=lambda i: -measured["hybrid"][i])[:5]
    progress("slowest hybrid queries: " + ", ".join(f"{measured['hybrid'][i]:.1f} ms (query {i})" for i in slowest))
    return measured


def _hybrid(workspace, question: str, vector, params: RetrievalParams, *, exact: bool = False):
    with transaction.atomic():
        if exact:
            # No index scan: the dense leg reads the workspace's rows and sorts them all.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_indexscan = off")
        return chunk_search(workspace=workspace, question=question, query_vector=vector, params=params)
