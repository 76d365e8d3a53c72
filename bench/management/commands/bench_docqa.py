"""Questions over real documents, right or wrong, and whether the risk label says which
(BENCHMARKS.md, bench_docqa).

Every file under --files goes through the product's upload service into one temporary workspace
and is ingested by the worker; each question of --questions is then asked through the product's
answer service (`query_answer`) with the workspace's default settings and the local provider. An
answerable question is right when one of its expected answers appears in the answer, refused when
the answer is a refusal, else wrong; an unanswerable one is right when refused. The report says
how the wrong answers were labelled, how often a Low risk label was right, and how well the
confidence ranks right answers above wrong ones (AUROC).
"""

from __future__ import annotations

import re
import time
import unicodedata
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.core.errors import ApplicationError
from apps.documents.models import Document
from apps.documents.services import document_create
from apps.queries.services import query_answer
from apps.workspaces.models import WorkspaceSettings
from bench.common import auroc, celery_worker, data_path, emit, progress, read_jsonl, temporary_workspace, wait_settled

RISKS = ("low", "medium", "high")


class Command(BaseCommand):
    help = "Ask questions with gold answers over real documents; report right / refused / wrong and how the risk labels fit."

    def add_arguments(self, parser):
        parser.add_argument("--files", type=Path, default=data_path("docs"))
        parser.add_argument("--questions", type=Path, default=data_path("docqa", "questions.jsonl"))
        parser.add_argument("--mode", choices=("verified", "naive"), default="verified")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the worker to ingest every file")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, files: Path, questions: Path, mode: str, timeout: float, json_path: str | None, **options):
        started = time.perf_counter()
        paths = sorted(p for p in Path(files).rglob("*") if p.is_file()) if Path(files).is_dir() else []
        if not paths:
            raise CommandError(f"No files under {files}.")
        asked = [_question(row, n) for n, row in enumerate(read_jsonl(questions), start=1)]
        with celery_worker() as worker_note, temporary_workspace("docqa") as workspace:
            progress(f"bench_docqa: worker {worker_note}; {len(paths)} file(s), {len(asked)} question(s), {mode} mode")
            _upload(workspace, paths, timeout)
            # The local provider, whatever keys the server has: the offline default is what is measured.
            WorkspaceSettings.objects.filter(workspace=workspace).update(provider_order="local")
            rows = [_ask(workspace, q, mode) for q in asked]
        emit(summary(rows) | {"seconds": round(time.perf_counter() - started, 1)}, json_path, self.stdout)


def _question(row: dict, number: int) -> dict:
    if not isinstance(row.get("question"), str) or not isinstance(row.get("answerable"), bool):
        raise CommandError(f"Question {number} needs a text “question” and a true/false “answerable”.")
    expected = row.get("expected_answer") or []
    return {"question": row["question"], "answerable": row["answerable"], "expected": [expected] if isinstance(expected, str) else expected}


def _upload(workspace, paths: list[Path], timeout: float) -> None:
    for path in paths:
        try:
            document_create(workspace=workspace, actor=None, filename=path.name, data=path.read_bytes())
        except ApplicationError as exc:
            progress(f"warning: {path.name} refused: {exc.message}")
    wait_settled(workspace, timeout)
    for name, error in Document.objects.filter(workspace=workspace, status="failed").values_list("filename", "error"):
        progress(f"warning: {name} failed to ingest: {error}")


def _ask(workspace, question: dict, mode: str) -> dict:
    began = time.perf_counter()
    run = query_answer(workspace=workspace, actor=None, question=question["question"], mode=mode, actor_label="bench_docqa")
    ms = round((time.perf_counter() - began) * 1000, 1)
    if run.insufficient:
        outcome = "refused"
    elif question["answerable"]:
        outcome = "right" if any(normalised(e) in normalised(run.answer) for e in question["expected"] if e) else "wrong"
    else:
        outcome = "answered"
    risk = None if run.insufficient else run.risk
    confidence = None if run.insufficient else run.confidence
    return {
        "question": question["question"],
        "answerable": question["answerable"],
        "outcome": outcome,
        "risk": risk,
        "confidence": confidence,
        "ms": ms,
    }


def normalised(text: str) -> str:
    """NFKC, lower case, whitespace collapsed, en and em dashes read as hyphens."""
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2013", "-").replace("\u2014", "-")
    return re.sub(r"\s+", " ", text).strip()


def summary(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    answered = [r for r in rows if r["outcome"] != "refused"]
    right = [r for r in answered if r["outcome"] == "right"]
    wrong = [r for r in answered if r["outcome"] != "right"]
    low = [r for r in answered if r["risk"] == "low"]
    return {
        "n": len(rows),
        "n_answerable": len(answerable),
        "n_unanswerable": len(unanswerable),
        "answerable": {key: sum(r["outcome"] == key for r in answerable) for key in ("right", "refused", "wrong")},
        "unanswerable": {key: sum(r["outcome"] == key for r in unanswerable) for key in ("refused", "answered")},
        "wrong_answers": _by_risk(wrong),
        "right_answers": _by_risk(right),
        "low_risk_precision": round(sum(r["outcome"] == "right" for r in low) / len(low), 4) if low else None,
        # How well confidence ranks right answers above wrong ones (a missing one counts as 0).
        "risk_auroc": auroc([r["confidence"] or 0.0 for r in right], [r["confidence"] or 0.0 for r in wrong]),
        "per_question": rows,
    }


def _by_risk(rows: list[dict]) -> dict:
    return {"n": len(rows)} | {risk: sum(r["risk"] == risk for r in rows) for risk in RISKS}
