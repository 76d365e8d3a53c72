from __future__ import annotations

import json
import random
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.documents.services import document_create, document_ingest
from apps.evals.services import question_ask_both
from apps.evals.sweep import ANSWERABLE, IN_DOMAIN, OFF_TOPIC, Outcome, contains_gold, metrics, recommend, sweep, transfer
from apps.workspaces.selectors import settings_get
from bench.common import data_path, emit, progress, temporary_workspace

SWEEP = [round(0.01 * i, 2) for i in range(0, 81)]


class Command(BaseCommand):
    help = "Answerable vs unanswerable SQuAD 2.0 questions through the real pipeline, verified and naive, with a threshold sweep."

    def add_arguments(self, parser):
        parser.add_argument("--squad", type=Path, default=data_path("squad2", "dev.json"))
        parser.add_argument("--off-topic", type=int, default=100, help="answerable questions of other articles asked in each workspace")
        parser.add_argument("--limit-questions", type=int, default=None, help="per article, for quick runs")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, squad: Path, off_topic: int, limit_questions: int | None, json_path: str | None, **options):
        articles = _read_squad(Path(squad))
        outcomes: list[Outcome] = []
        by_article: dict[str, list[Outcome]] = {}
        threshold = None
        started = time.perf_counter()
        for index, article in enumerate(articles):
            foreign = _off_topic_questions(articles, index, off_topic)
            with temporary_workspace("gate") as workspace:
                threshold = settings_get(workspace=workspace).gate_threshold
                _ingest(workspace, article)
                questions = _questions(article, limit_questions) + [(OFF_TOPIC, q, []) for q in foreign]
                for done, (kind, question, golds) in enumerate(questions, start=1):
                    outcome = _ask(workspace, kind, question, golds)
                    outcomes.append(outcome)
                    by_article.setdefault(article["title"], []).append(outcome)
                    if done % 50 == 0 or done == len(questions):
                        progress(f"{article['title']}: {done}/{len(questions)} questions, {time.perf_counter() - started:.0f} s")
        rows = sweep(outcomes, SWEEP)
        result = {
            "n_answerable": sum(o.kind == ANSWERABLE for o in outcomes),
            "n_in_domain": sum(o.kind == IN_DOMAIN for o in outcomes),
            "n_off_topic": sum(o.kind == OFF_TOPIC for o in outcomes),
            "threshold": threshold,
            "verified": metrics(outcomes, threshold=threshold),
            "naive": metrics(outcomes, threshold=None),
            "sweep": rows,
            "recommended_threshold": recommend(rows),
            # the threshold recommended on one article, applied to each other one
            "transfer": transfer(by_article, SWEEP) if len(by_article) > 1 else [],
            "seconds": round(time.perf_counter() - started, 1),
        }
        emit(result, json_path, self.stdout)


def _ask(workspace, kind: str, question: str, golds: list[str]) -> Outcome:
    opened, naive = question_ask_both(workspace=workspace, question=question, actor_label="bench_gate")
    return Outcome(
        kind=kind,
        answered_open=not opened.insufficient,
        top_score=opened.gate.get("top_score"),
        correct_open=contains_gold(opened.answer, golds),
        answered_naive=not naive.insufficient,
        correct_naive=contains_gold(naive.answer, golds),
    )


def _read_squad(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"{path} is not SQuAD 2.0 JSON: {exc}") from exc
    if not data:
        raise CommandError(f"{path} holds no articles.")
    return data


def _ingest(workspace, article: dict) -> None:
    for number, paragraph in enumerate(article["paragraphs"], start=1):
        document, created = document_create(
            workspace=workspace,
            actor=None,
            filename=f"{article['title']}-{number:03d}.txt",
            data=paragraph["context"].encode(),
            enqueue=False,
        )
        if created:
            document_ingest(workspace=workspace, document_id=document.pk)


def _questions(article: dict, limit: int | None) -> list[tuple[str, str, list[str]]]:
    found = [
        (IN_DOMAIN if qa.get("is_impossible") else ANSWERABLE, qa["question"], [a["text"] for a in qa.get("answers", [])])
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    return found[:limit] if limit else found


def _off_topic_questions(articles: list[dict], index: int, count: int) -> list[str]:
    """Answerable questions of the other articles: nothing in this workspace can answer them."""
    pool = [q for i, a in enumerate(articles) if i != index for kind, q, _ in _questions(a, None) if kind == ANSWERABLE]
    return random.Random(index).sample(pool, min(count, len(pool)))
