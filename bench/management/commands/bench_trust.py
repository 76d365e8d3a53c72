from __future__ import annotations

import json
import math
import time
from itertools import combinations
from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from apps.documents.services import document_create, document_ingest
from apps.pipeline.embedding import product_embedder
from apps.queries.services import answer_assess
from bench.common import auroc, data_path, emit, progress, temporary_workspace

RIGHT, HALLUCINATED = "right", "hallucinated"


class Command(BaseCommand):
    help = "HaluEval QA: how well the trust score ranks right answers above hallucinated ones, against the original formula."

    def add_arguments(self, parser):
        parser.add_argument("--halueval", type=Path, default=data_path("halueval", "qa_dev.jsonl"))
        parser.add_argument("--limit", type=int, default=None, help="first N items, for quick runs")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, halueval: Path, limit: int | None, json_path: str | None, **options):
        items = _read(Path(halueval))[:limit]
        embedder = product_embedder()
        scored: list[tuple[str, float, float, str]] = []  # kind, confidence, baseline, risk
        started = time.perf_counter()
        for done, item in enumerate(items, start=1):
            with temporary_workspace("trust") as workspace:
                document, _ = document_create(
                    workspace=workspace, actor=None, filename="knowledge.txt", data=item["knowledge"].encode(), enqueue=False
                )
                document_ingest(workspace=workspace, document_id=document.pk)
                for kind, answer in ((RIGHT, item["right_answer"]), (HALLUCINATED, item["hallucinated_answer"])):
                    assessment = answer_assess(workspace=workspace, question=item["question"], answer_text=answer)
                    baseline = original_formula(item["question"], answer, [c.text for c in assessment.sources], embedder)
                    # An answer the assessment could tie to no source is a refusal: no confidence, counted as none.
                    scored.append((kind, assessment.trust.confidence or 0.0, baseline, assessment.trust.risk))
            if done % 25 == 0 or done == len(items):
                progress(f"{done}/{len(items)} items, {time.perf_counter() - started:.0f} s")
        emit(_result(scored, time.perf_counter() - started), json_path, self.stdout)


def original_formula(question: str, answer: str, chunks: list[str], embedder) -> float:
    """The original TrustRAG confidence: 0.4 · e^(−L2/50) of the best chunk to the question,
    0.3 · mean pairwise word overlap (Jaccard) of the retrieved chunks, 0.3 · share of the
    answer's first 10 tokens found in the context."""
    if not chunks:
        return 0.0
    question_vector = embedder.embed([question])[0]
    distance = float(np.min(np.linalg.norm(embedder.embed(chunks) - question_vector, axis=1)))
    bags = [set(c.lower().split()) for c in chunks]
    pairs = [len(a & b) / len(a | b) for a, b in combinations(bags, 2) if a | b]
    overlap = sum(pairs) / len(pairs) if pairs else 1.0
    context = " ".join(chunks).lower()
    tokens = answer.lower().split()[:10]
    found = sum(t in context for t in tokens) / len(tokens) if tokens else 0.0
    return 0.4 * math.exp(-distance / 50) + 0.3 * overlap + 0.3 * found


def _result(scored, seconds: float) -> dict:
    def of(kind, column):
        return [row[column] for row in scored if row[0] == kind]

    risks = {kind: {level: of(kind, 3).count(level) for level in ("low", "medium", "high")} for kind in (RIGHT, HALLUCINATED)}
    return {
        "n": len(scored) // 2,
        # P(a right answer scores above a hallucinated one).
        "auroc": auroc(of(RIGHT, 1), of(HALLUCINATED, 1), empty=math.nan),
        "auroc_baseline": auroc(of(RIGHT, 2), of(HALLUCINATED, 2), empty=math.nan),
        "risk_counts": risks,
        "seconds": round(seconds, 1),
    }


def _read(path: Path) -> list[dict]:
    items = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                row = json.loads(line)
                if not all(isinstance(row.get(k), str) for k in ("knowledge", "question", "right_answer", "hallucinated_answer")):
                    raise CommandError(f"{path}:{number} lacks knowledge, question, right_answer or hallucinated_answer")
                items.append(row)
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path} is not HaluEval JSONL: {exc}") from exc
    if not items:
        raise CommandError(f"{path} holds no items.")
    return items
