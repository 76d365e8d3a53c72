"""Answerable vs unanswerable questions through the real pipeline: the metrics of the gate.

Shared by `bench_gate` (and later evaluation runs): each question is asked once in
verified mode with the gate opened (threshold 0) and once in naive mode. The gate is
the last decision before generation and generation does not depend on it, so the
verified outcome at any threshold t is exact from that one run: answered iff the
generator answered and the best relevance left after correction reaches t.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

ANSWERABLE, IN_DOMAIN, OFF_TOPIC = "answerable", "in_domain", "off_topic"


@dataclass(frozen=True)
class Outcome:
    kind: str
    answered_open: bool  # verified mode with the gate at 0
    top_score: float | None  # best relevance the gate saw
    correct_open: bool
    answered_naive: bool
    correct_naive: bool


def normalise(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def contains_gold(answer: str, golds: list[str]) -> bool:
    haystack = normalise(answer)
    return any(normalise(g) and normalise(g) in haystack for g in golds)


def answered_at(outcome: Outcome, threshold: float) -> bool:
    return outcome.answered_open and outcome.top_score is not None and outcome.top_score >= threshold


def metrics(outcomes: list[Outcome], *, threshold: float | None) -> dict:
    """Verified metrics at `threshold`, or naive metrics when threshold is None."""

    def answered(o: Outcome) -> bool:
        return o.answered_naive if threshold is None else answered_at(o, threshold)

    def correct(o: Outcome) -> bool:
        return answered(o) and (o.correct_naive if threshold is None else o.correct_open)

    by_kind = {kind: [o for o in outcomes if o.kind == kind] for kind in (ANSWERABLE, IN_DOMAIN, OFF_TOPIC)}
    unanswerable = by_kind[IN_DOMAIN] + by_kind[OFF_TOPIC]
    refused = [o for o in outcomes if not answered(o)]
    return {
        "answer_rate": _share(by_kind[ANSWERABLE], answered),
        "correct_rate": _share(by_kind[ANSWERABLE], correct),
        "in_domain": {"refusal_rate": _share(by_kind[IN_DOMAIN], lambda o: not answered(o))},
        "off_topic": {"refusal_rate": _share(by_kind[OFF_TOPIC], lambda o: not answered(o))},
        "refusal_precision": _share(refused, lambda o: o.kind != ANSWERABLE),
        "hallucination_rate": _share(unanswerable, answered),
    }


def sweep(outcomes: list[Outcome], thresholds: list[float]) -> list[dict]:
    rows = []
    for t in thresholds:
        m = metrics(outcomes, threshold=t)
        refused_unanswerable = sum(1 for o in outcomes if o.kind != ANSWERABLE and not answered_at(o, t))
        refused = sum(1 for o in outcomes if not answered_at(o, t))
        unanswerable = sum(1 for o in outcomes if o.kind != ANSWERABLE)
        precision = refused_unanswerable / refused if refused else 0.0
        recall = refused_unanswerable / unanswerable if unanswerable else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append(
            {
                "threshold": round(t, 4),
                "answer_rate": m["answer_rate"],
                "in_domain_refusal_rate": m["in_domain"]["refusal_rate"],
                "off_topic_refusal_rate": m["off_topic"]["refusal_rate"],
                "f1": round(f1, 4),
            }
        )
    return rows


def recommend(rows: list[dict], *, min_answer_rate: float = 0.85) -> float:
    """The best-F1 threshold among those that still answer enough answerable questions."""
    eligible = [r for r in rows if r["answer_rate"] >= min_answer_rate] or rows
    return max(eligible, key=lambda r: (r["f1"], -r["threshold"]))["threshold"]


def _share(items: list, predicate) -> float:
    return round(sum(1 for item in items if predicate(item)) / len(items), 4) if items else 0.0
