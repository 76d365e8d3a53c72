"""The whole answer path, timed (BENCHMARKS.md, bench_answer).

The corpus is ingested into one temporary workspace through the product's ingestion; each query
(the first --limit of a BEIR queries file) is then asked through `query_answer` — retrieval SQL,
reranker, correction, gate, local provider, local judge, trust, audit record — one at a time
after one warm-up question, in each mode, each mode with the embedder's cache emptied first.
Refusals (the gate's, or the provider finding nothing) are counted and timed apart from answers. CPU time is this process's (every thread of it).
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.audits.selectors import audit_record_for_run
from apps.pipeline.embedding import product_embedder
from apps.queries.services import query_answer
from bench.common import data_path, emit, ingest_records, percentile, progress, read_jsonl, temporary_workspace

MODES = ("verified", "naive")
STAGES = ("retrieve", "rerank", "correct", "gate", "generate", "verify", "score", "record")
WARM_UP = "What is this corpus about?"


class Command(BaseCommand):
    help = "Time the whole answer path (query_answer, local provider and judge) per stage over a BEIR corpus and queries."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", type=Path, default=data_path("scifact", "corpus.jsonl.gz"))
        parser.add_argument("--queries", type=Path, default=data_path("scifact", "queries.jsonl"))
        parser.add_argument("--limit", type=int, default=200, help="the first N queries")
        parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: verified, naive")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, corpus: Path, queries: Path, limit: int, modes: str, json_path: str | None, **options):
        wanted = _modes(modes)
        records, questions = _read(Path(corpus), Path(queries), limit)
        progress(f"bench_answer: {len(records)} docs, {len(questions)} questions, modes {', '.join(wanted)}")
        with temporary_workspace("answer") as workspace:
            ingest_records(workspace, records)
            results = {mode: _mode(workspace, questions, mode) for mode in wanted}
        emit({"n": len(questions), "modes": results}, json_path, self.stdout)


def _mode(workspace, questions: list[str], mode: str) -> dict:
    """Every question in one mode, after one warm-up question (it loads the models); the
    embedder's cache of sentence vectors is emptied first, so no mode runs on another's."""
    product_embedder().forget()
    ask(workspace, WARM_UP, mode)
    return _summary([ask(workspace, q, mode) for q in _progress(questions, mode)])


def ask(workspace, question: str, mode: str) -> dict:
    """One question through the product's answer service: its wall, CPU and stage times."""
    wall, cpu = time.perf_counter(), time.process_time()
    run = query_answer(workspace=workspace, actor=None, question=question, mode=mode, actor_label="bench_answer")
    wall_ms, cpu_ms = (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000
    stages = {s["name"]: s["ms"] for s in run.stages if s.get("ms") is not None}
    answerability = (run.gate or {}).get("answerability")
    if "gate" not in stages and answerability is not None:
        stages["gate"] = _timing(run, "answerability")  # the gate's own work is its answerability read
    stages["record"] = max(0.0, wall_ms - (run.duration_ms or 0))  # persisting the run and its audit record
    return {"ms": wall_ms, "cpu_ms": cpu_ms, "refused": run.insufficient, "stages": {k: v for k, v in stages.items() if v is not None}}


def _timing(run, name: str) -> float | None:
    record = audit_record_for_run(workspace=run.workspace, query_run_id=run.pk)
    return (record.payload.get("timings_ms") or {}).get(name) if record else None


def _summary(asked: list[dict]) -> dict:
    answered = [a for a in asked if not a["refused"]]
    refused = [a for a in asked if a["refused"]]
    stages = {}
    for stage in STAGES:
        values = [a["stages"][stage] for a in asked if stage in a["stages"]]
        if values:
            stages[stage] = {"p50_ms": round(percentile(values, 50), 2), "p95_ms": round(percentile(values, 95), 2)}
    return {
        "answered": len(answered),
        "refused": len(refused),
        "p50_ms": round(percentile([a["ms"] for a in answered], 50), 2),
        "p95_ms": round(percentile([a["ms"] for a in answered], 95), 2),
        "refusal_p50_ms": round(percentile([a["ms"] for a in refused], 50), 2),
        "cpu_ms_per_answer": round(sum(a["cpu_ms"] for a in asked) / max(1, len(asked)), 2),
        "stages": stages,
    }


def _progress(questions: list[str], mode: str):
    for done, question in enumerate(questions, start=1):
        if done % 25 == 0 or done == len(questions):
            progress(f"{mode}: {done}/{len(questions)} questions")
        yield question


def _modes(raw: str) -> list[str]:
    modes = list(dict.fromkeys(m.strip().lower() for m in raw.split(",") if m.strip()))
    if not modes or any(m not in MODES for m in modes):
        raise CommandError(f"--modes takes a comma-separated list of {', '.join(MODES)} (got {raw!r}).")
    return modes


def _read(corpus: Path, queries: Path, limit: int) -> tuple[list[dict], list[str]]:
    if limit < 1:
        raise CommandError("--limit must be at least 1.")
    for path in (corpus, queries):
        if not path.is_file():
            raise CommandError(f"{path} does not exist.")
    try:
        records = list(read_jsonl(corpus))
        questions = [str(q["text"]).strip() for q in read_jsonl(queries)][:limit]
    except (ValueError, KeyError, OSError) as exc:
        raise CommandError(f"Cannot read the input (BEIR corpus and queries, BENCHMARKS.md): {exc}") from exc
    if not records or not questions:
        raise CommandError("The corpus and the queries must each hold at least one record.")
    return records, [q for q in questions if q]
