"""Fit and check the probability that an answer answers its question (apps/pipeline/answering.py).

Every SQuAD 2.0 article of --squad is ingested into its own temporary workspace and each of its
questions asked through the product's answer service (verified mode, local provider, default
settings). Each answer that is given is right when it holds a gold answer (an unanswerable
question answered is wrong), and its score is the answer scorer's raw score of its
best-answering claim. Platt scaling turns that score into p(right):

- leave one article out: fitted on the other articles, applied to this one — the figures reported
  for SQuAD are these, so no article is scored by a fit that saw it;
- on all articles: the fit written with --write (the calibration the product loads), applied as
  it is to the real documents of --files / --questions, a data set it never saw.

For each side: how well p(right) and the answer's confidence (the sources' backing) rank right
answers above wrong ones (AUROC), the reliability table (per band of p(right), the share right),
and with the risk cut-offs in force (Low needs both the confidence and p(right) at the Low
cut-off), the share of wrong answers labelled Low and the share of Low answers that were right.
"""

from __future__ import annotations

import json
import time
from datetime import date
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.documents.services import document_create, document_ingest
from apps.evals.sweep import contains_gold
from apps.pipeline.answering import CALIBRATION_PATH
from apps.queries.services import answer_reader_get, query_answer
from apps.workspaces.models import WorkspaceSettings
from bench.calibration import expected_calibration_error, platt, reliability, sigmoid
from bench.common import auroc, data_path, emit, progress, read_jsonl, temporary_workspace


class Command(BaseCommand):
    help = "Fit p(an answer answers its question) on SQuAD 2.0 articles (leave one out) and check it on real documents."

    def add_arguments(self, parser):
        parser.add_argument("--squad", type=Path, default=data_path("squad2", "dev8.json"))
        parser.add_argument("--files", type=Path, default=data_path("docs"))
        parser.add_argument("--questions", type=Path, default=data_path("docqa", "questions.jsonl"))
        parser.add_argument("--limit-questions", type=int, default=None, help="per article, for quick runs")
        parser.add_argument(
            "--write", type=Path, default=None, help=f"write the fit on all articles here (the product reads {CALIBRATION_PATH})"
        )
        parser.add_argument("--rows", type=Path, default=None, help="also write every answer given (question, claims, scores) here")
        parser.add_argument("--json", dest="json_path")

    def handle(
        self,
        *args,
        squad: Path,
        files: Path,
        questions: Path,
        limit_questions: int | None,
        write: Path | None,
        rows: Path | None,
        json_path,
        **options,
    ):
        started = time.perf_counter()
        scorer = answer_reader_get().name
        articles = _read_squad(squad)
        squad_rows: list[dict] = []
        for article in articles:
            with temporary_workspace("answering") as workspace:
                _ingest_texts(
                    workspace, [(f"{article['title']}-{n:03d}.txt", p["context"].encode()) for n, p in enumerate(article["paragraphs"], 1)]
                )
                asked = [
                    (not qa.get("is_impossible"), qa["question"], [a["text"] for a in qa.get("answers", [])])
                    for p in article["paragraphs"]
                    for qa in p["qas"]
                ][:limit_questions]
                squad_rows += [_ask(workspace, article["title"], *q) for q in asked]
            progress(f"{article['title']}: {len(asked)} questions, {time.perf_counter() - started:.0f} s")
        given = [r for r in squad_rows if r["score"] is not None]
        if len({r["group"] for r in given}) < 2:
            raise CommandError("Leave-one-article-out needs answers in at least two articles.")
        for article in sorted({r["group"] for r in given}):
            slope, intercept = platt(
                [r["score"] for r in given if r["group"] != article], [r["right"] for r in given if r["group"] != article]
            )
            for r in given:
                if r["group"] == article:
                    r["p"] = sigmoid(slope * r["score"] + intercept)
        cutoff = WorkspaceSettings._meta.get_field("risk_low_cutoff").default
        slope, intercept = platt([r["score"] for r in given], [r["right"] for r in given])
        result = {
            "scorer": scorer,
            "fit": {"slope": round(slope, 6), "intercept": round(intercept, 6), "answers": len(given)},
            "squad_leave_one_article_out": _report(given, cutoff) | {"refused": len(squad_rows) - len(given)},
        }
        if files and questions and Path(files).is_dir():
            doc_rows = _docqa(files, questions)
            doc_given = [r for r in doc_rows if r["score"] is not None]
            for r in doc_given:
                r["p"] = sigmoid(slope * r["score"] + intercept)
            result["docqa_held_out"] = _report(doc_given, cutoff) | {"refused": len(doc_rows) - len(doc_given)}
        result["seconds"] = round(time.perf_counter() - started, 1)
        if rows:
            Path(rows).write_text(json.dumps(given + (doc_given if "docqa_held_out" in result else []), indent=1))
        if write:
            _write(write, scorer, slope, intercept, result, squad)
        emit(result, json_path, self.stdout)


def _read_squad(path: Path) -> list[dict]:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"{path} is not SQuAD 2.0 JSON: {exc}") from exc


def _ingest_texts(workspace, named: list[tuple[str, bytes]]) -> None:
    for name, data in named:
        document, created = document_create(workspace=workspace, actor=None, filename=name, data=data, enqueue=False)
        if created:
            document_ingest(workspace=workspace, document_id=document.pk)


def _docqa(files: Path, questions: Path) -> list[dict]:
    rows = []
    with temporary_workspace("answering-docqa") as workspace:
        for path in sorted(p for p in Path(files).rglob("*") if p.is_file()):
            try:
                _ingest_texts(workspace, [(path.name, path.read_bytes())])
            except Exception as exc:  # a file the product refuses is reported, as bench_docqa does
                progress(f"warning: {path.name}: {exc}")
        for row in read_jsonl(questions):
            expected = row.get("expected_answer") or []
            rows.append(_ask(workspace, "docqa", row["answerable"], row["question"], [expected] if isinstance(expected, str) else expected))
    return rows


def _ask(workspace, group: str, answerable: bool, question: str, golds: list[str]) -> dict:
    WorkspaceSettings.objects.filter(workspace=workspace).update(provider_order="local")
    run = query_answer(workspace=workspace, actor=None, question=question, mode="verified", actor_label="bench_answering")
    if run.insufficient:
        return {"group": group, "score": None}
    scores = [c["answer_score"] for c in run.claims if c.get("answer_score") is not None]
    return {
        "group": group,
        "question": question,
        "score": max(scores) if scores else 0.0,
        "backed": run.confidence,  # the sources' backing: the answering probability caps the risk, not the confidence
        "right": answerable and contains_gold(run.answer, golds),
        "claims": [{"text": c["text"], "answer_score": c.get("answer_score")} for c in run.claims],
    }


def _report(rows: list[dict], low_cutoff: float) -> dict:
    right = [r for r in rows if r["right"]]
    wrong = [r for r in rows if not r["right"]]
    low = [r for r in rows if r["backed"] >= low_cutoff and r["p"] >= low_cutoff]
    return {
        "answers": len(rows),
        "right": len(right),
        "wrong": len(wrong),
        "auroc_p_right": auroc([r["p"] for r in right], [r["p"] for r in wrong]),
        "auroc_confidence": auroc([r["backed"] for r in right], [r["backed"] for r in wrong]),
        "ece": expected_calibration_error([r["p"] for r in rows], [r["right"] for r in rows]),
        "reliability": reliability([r["p"] for r in rows], [r["right"] for r in rows]),
        "low_risk": {
            "n": len(low),
            "precision": round(sum(r["right"] for r in low) / len(low), 3) if low else None,
            "wrong_labelled_low": round(sum(not r["right"] for r in low) / len(wrong), 3) if wrong else None,
        },
    }


def _write(path: Path, scorer: str, slope: float, intercept: float, result: dict, squad: Path) -> None:
    path = Path(path)
    existing = json.loads(path.read_text()) if path.exists() else {}
    scorers = existing.get("scorers", {})
    scorers[scorer] = {
        "slope": round(slope, 6),
        "intercept": round(intercept, 6),
        "fitted_on": f"{Path(squad).name}: answers the pipeline gave (verified mode, local provider, default settings)",
        "answers": result["fit"]["answers"],
        "fitted": date.today().isoformat(),
        "command": f"python manage.py bench_answering --squad {squad} --write {path}",
        "squad_leave_one_article_out": {k: result["squad_leave_one_article_out"][k] for k in ("auroc_p_right", "ece", "reliability")},
    }
    about = "p(an answer is right | its best-answering claim's raw score) = sigmoid(slope * score + intercept), per answer scorer"
    path.write_text(json.dumps({"about": about, "scorers": scorers}, indent=1) + "\n")
