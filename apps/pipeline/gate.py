"""The confidence gate: refuse before generating when the documents are unlikely to answer.

The gate scores the best passage left after correction on two things, each in [0, 1]:
relevance (the reranker's score) and answerability — the local support judge's probability
that the passage's sentence closest to the question supports the question read as a claim.
Relevance alone cannot tell a passage about the right subject from one that answers: SQuAD 2.0's
unanswerable questions are written against the very paragraph that does not answer them. The gate
score is the weaker of the two, so one threshold covers both kinds of unanswerable question
(calibrated with `bench_gate`, see the README)."""

from __future__ import annotations

from dataclasses import dataclass

REFUSAL = "I do not have sufficient information in the documents to answer this."


@dataclass(frozen=True)
class GateDecision:
    enabled: bool
    threshold: float
    top_score: float | None  # the gate score: min(relevance, answerability) when both are known
    passed: bool
    reason: str
    relevance: float | None = None
    answerability: float | None = None


def gate_score(relevance: float | None, answerability: float | None) -> float | None:
    if relevance is None:
        return None
    return relevance if answerability is None else min(relevance, answerability)


def confidence_gate(
    scores: list[float],
    *,
    threshold: float,
    enabled: bool,
    answerability: float | None = None,
    empty_reason: str = "no passage was retrieved",
) -> GateDecision:
    relevance = max(scores) if scores else None
    top = gate_score(relevance, answerability)
    known = {"relevance": relevance, "answerability": answerability}
    if not enabled:
        return GateDecision(False, threshold, top, True, "gate off (naive mode)", **known)
    if top is None:
        return GateDecision(True, threshold, None, False, empty_reason, **known)
    parts = f"relevance {relevance:.3f}" + ("" if answerability is None else f", answerability {answerability:.3f}")
    if top < threshold:
        weaker = "answerability" if answerability is not None and answerability < relevance else "relevance"
        return GateDecision(True, threshold, top, False, f"{weaker} {top:.3f} is below the threshold {threshold:.3f} ({parts})", **known)
    reach = "reaches" if answerability is None else "both reach"
    return GateDecision(True, threshold, top, True, f"{parts}: {reach} the threshold {threshold:.3f}", **known)
