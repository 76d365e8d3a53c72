"""The gate's sweep: answerable vs unanswerable questions through the real pipeline, and the
gate's metrics at every threshold (the gate itself, the decision, is apps.pipeline.gate).

Shared by `bench_gate` and the evaluation runs of apps.evals: each question is asked once in
verified mode with the gate opened (threshold 0) and once in naive mode. The gate is
the last decision before generation and generation does not depend on it, so the
verified outcome at any threshold t is exact from that one run: answered iff the
generator answered and the gate score (min of the best relevance left after correction and
its answerability) reaches t.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass

ANSWERABLE, IN_DOMAIN, OFF_TOPIC = "answerable", "in_domain", "off_topic"
UNANSWERABLE = "unanswerable"  # an evaluation set's question that its workspace cannot answer
RISKS = ("low", "medium", "high")


@dataclass(frozen=True)
class Outcome:
    kind: str
    answered_open: bool  # verified mode with the gate at 0
    top_score: float | None  # the gate score it saw
    correct_open: bool
    answered_naive: bool
    correct_naive: bool
    graded: bool = True  # False: an answerable question with nothing to check its answer against
    risk_open: str = ""
    risk_naive: str = ""
    retrieval_score: float | None = None  # best reranked relevance, before correction


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
    unanswerable = [o for o in outcomes if o.kind != ANSWERABLE]
    refused = [o for o in outcomes if not answered(o)]
    return {
        "answer_rate": _share(by_kind[ANSWERABLE], answered),
        "correct_rate": _share([o for o in by_kind[ANSWERABLE] if o.graded], correct),
        "in_domain": {"refusal_rate": _share(by_kind[IN_DOMAIN], lambda o: not answered(o))},
        "off_topic": {"refusal_rate": _share(by_kind[OFF_TOPIC], lambda o: not answered(o))},
        "refusal_precision": _share(refused, lambda o: o.kind != ANSWERABLE),
        "hallucination_rate": _share(unanswerable, answered),
    }


def sweep(outcomes: list[Outcome], thresholds: list[float]) -> list[dict]:
    rows = []
    for t in thresholds:
        m = metrics(outcomes, threshold=t)
        rows.append(
            {
                "threshold": round(t, 4),
                "answer_rate": m["answer_rate"],
                "in_domain_refusal_rate": m["in_domain"]["refusal_rate"],
                "off_topic_refusal_rate": m["off_topic"]["refusal_rate"],
                "f1": _refusal_f1(outcomes, t),
            }
        )
    return rows


def _refusal_f1(outcomes: list[Outcome], t: float) -> float:
    """F1 of "refuse an unanswerable question" (the positive class) at gate threshold t."""
    refused_unanswerable = sum(1 for o in outcomes if o.kind != ANSWERABLE and not answered_at(o, t))
    refused = sum(1 for o in outcomes if not answered_at(o, t))
    unanswerable = sum(1 for o in outcomes if o.kind != ANSWERABLE)
    precision = refused_unanswerable / refused if refused else 0.0
    recall = refused_unanswerable / unanswerable if unanswerable else 0.0
    return round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0


# --- evaluation sets: answerable vs unanswerable, without bench_gate's two kinds ----------


def evaluation_metrics(outcomes: list[Outcome], *, threshold: float | None) -> dict:
    """An evaluation set's metrics in verified mode at `threshold`, or in naive mode (None)."""

    def answered(o: Outcome) -> bool:
        return o.answered_naive if threshold is None else answered_at(o, threshold)

    def risk(o: Outcome) -> str:
        return o.risk_naive if threshold is None else o.risk_open

    base = metrics(outcomes, threshold=threshold)
    answerable = [o for o in outcomes if o.kind == ANSWERABLE]
    unanswerable = [o for o in outcomes if o.kind != ANSWERABLE]
    return {
        "answer_rate": base["answer_rate"],
        "correct_rate": base["correct_rate"],
        "refusal_precision": base["refusal_precision"],
        "refusal_recall": _share(unanswerable, lambda o: not answered(o)),
        "hallucination_rate": base["hallucination_rate"],
        "risk": {
            ANSWERABLE: _risk_counts(answerable, answered, risk),
            UNANSWERABLE: _risk_counts(unanswerable, answered, risk),
        },
    }


def _risk_counts(outcomes: list[Outcome], answered, risk) -> dict:
    """How many answers had each risk; a refusal is counted as refused, not by its risk."""
    counts = dict.fromkeys([*RISKS, "refused"], 0)
    for o in outcomes:
        label = risk(o) if answered(o) else "refused"
        counts[label if label in counts else "high"] += 1
    return counts


def evaluation_sweep(outcomes: list[Outcome], thresholds: list[float]) -> list[dict]:
    answerable = [o for o in outcomes if o.kind == ANSWERABLE]
    unanswerable = [o for o in outcomes if o.kind != ANSWERABLE]
    return [
        {
            "threshold": round(t, 4),
            "answer_rate": _share(answerable, lambda o, t=t: answered_at(o, t)),
            "refusal_rate": _share(unanswerable, lambda o, t=t: not answered_at(o, t)),
            "f1": _refusal_f1(outcomes, t),
        }
        for t in thresholds
    ]


def recommend_middle(rows: list[dict], *, min_answer_rate: float = 0.85) -> float:
    """Like `recommend`, but from the middle of the first stretch of thresholds that share the
    best F1: on a small set every threshold between two recorded scores scores the same, and
    the middle keeps the most margin on both sides."""
    eligible = [r for r in rows if r["answer_rate"] >= min_answer_rate] or rows
    best = max(r["f1"] for r in eligible)
    stretch: list[dict] = []
    for row in rows:
        if row in eligible and row["f1"] == best:
            stretch.append(row)
        elif stretch:
            break
    return stretch[(len(stretch) - 1) // 2]["threshold"]


def crag_suggestion(outcomes: list[Outcome], *, gate: float, share: float = 0.05) -> dict:
    """CRAG thresholds from the best reranked relevance of each question (before correction).

    lower: the highest 0.01 step that still keeps the best passage of all but `share` of the
    answerable questions (passages under it are dropped, so a higher one throws answers away);
    upper: the lowest 0.01 step that the best passage of at most `share` of the unanswerable
    questions reaches ("Correct" should rarely be said of what cannot be answered). Both
    bracket the gate threshold. None where the set has no question of that kind."""
    answerable = sorted(o.retrieval_score or 0.0 for o in outcomes if o.kind == ANSWERABLE)
    unanswerable = sorted((o.retrieval_score or 0.0 for o in outcomes if o.kind != ANSWERABLE), reverse=True)
    lower = upper = None
    if answerable:
        lower = min(math.floor(round(answerable[int(share * len(answerable))] * 100, 6)) / 100, gate)
    if unanswerable:
        upper = max(min((math.floor(round(unanswerable[int(share * len(unanswerable))] * 100, 6)) + 1) / 100, 1.0), gate)
    return {"crag_lower": lower, "crag_upper": upper}


def transfer(by_group: dict[str, list[Outcome]], thresholds: list[float]) -> list[dict]:
    """The threshold recommended on each group (a SQuAD article), applied to every other group:
    does a threshold tuned on one collection hold on another?"""
    rows = []
    for tuned_on, own in by_group.items():
        threshold = recommend(sweep(own, thresholds))
        for applied_to, others in by_group.items():
            if applied_to == tuned_on:
                continue
            m = metrics(others, threshold=threshold)
            rows.append(
                {
                    "tuned_on": tuned_on,
                    "applied_to": applied_to,
                    "threshold": threshold,
                    "answer_rate": m["answer_rate"],
                    "in_domain_refusal_rate": m["in_domain"]["refusal_rate"],
                    "off_topic_refusal_rate": m["off_topic"]["refusal_rate"],
                }
            )
    return rows


def recommend(rows: list[dict], *, min_answer_rate: float = 0.85) -> float:
    """The best-F1 threshold among those that still answer enough answerable questions."""
    eligible = [r for r in rows if r["answer_rate"] >= min_answer_rate] or rows
    return max(eligible, key=lambda r: (r["f1"], -r["threshold"]))["threshold"]


def _share(items: list, predicate) -> float:
    return round(sum(1 for item in items if predicate(item)) / len(items), 4) if items else 0.0
