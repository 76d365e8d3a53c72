"""The confidence gate: refuse before generating when the documents are unlikely to answer.

The gate scores the passages left after correction on two things, each in [0, 1]: relevance
(the reranker's best score) and answerability — the local judge's probability that a passage's
sentence closest to the question answers it, the best over the passages (`answer._answerability`).
Relevance alone cannot tell a passage about the right subject from one that answers: SQuAD 2.0's
unanswerable questions are written against the very paragraph that does not answer them. The gate
score is the weaker of the two, so one threshold covers both kinds of unanswerable question
(calibrated with `bench_gate`, docs/evaluation.md).

Before any score, the gate asks whether the passages mention what the question names: a name
or a number of the question that no passage left after correction mentions (allowing for
inflection, accents and a misspelt letter), or a negated question where the best passage negates
nothing, or a word of the question whose opposite the best passage uses in its place ("soft" where
it says "hard"), means no passage can answer it, whatever the scores say. SQuAD 2.0 writes many of
its unanswerable questions so, with a year or a name moved, a "not" put in or a word turned into
its antonym."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from apps.pipeline.judging.cues import is_negation, words
from apps.pipeline.mentions import unmentioned
from apps.pipeline.opposites import opposed

REFUSAL = "I do not have sufficient information in the documents to answer this."


@dataclass(frozen=True)
class GateDecision:
    enabled: bool
    threshold: float
    top_score: float | None  # the gate score: min(relevance, answerability) when both are known, 0 when names are unmatched
    passed: bool
    reason: str
    relevance: float | None = None
    answerability: float | None = None
    unmatched: tuple[str, ...] = ()  # what the question names or asks that the passages do not mention


def unmatched_terms(question: str, best: str, others: Sequence[str] = (), *, near: str | None = None) -> tuple[str, ...]:
    """What the question names or asks that the passages do not mention: its names and numbers
    that neither the best passage nor any other mentions (`unmentioned`); its negation when the
    best passage, whose sentence the gate reads, negates nothing (what is not so can only be read
    where something is said not to be); and its words the best passage does not use while the
    sentences `near` the one the gate reads (all of the best passage by default) use their
    opposite ("soft" where they say "hard", the "second" level where they say the "first")."""
    missing = unmentioned(question, [best, *others])
    asked, passage = words(question), words(best)
    negation = next((w for w in asked if is_negation(w)), None)
    if negation and not any(is_negation(w) for w in passage):
        missing.append(negation)
    used = set(passage)
    missing.extend(word for word, _ in opposed(asked, words(best if near is None else near)) if word not in used)
    return tuple(dict.fromkeys(missing))


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
    unmatched: Sequence[str] = (),
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
    if unmatched:
        named = ", ".join(f"'{term}'" for term in unmatched)
        reason = f"the passages do not mention the question's {named} ({parts})"
        return GateDecision(True, threshold, 0.0, False, reason, **known, unmatched=tuple(unmatched))
    if top < threshold:
        weaker = "answerability" if answerability is not None and answerability < relevance else "relevance"
        return GateDecision(True, threshold, top, False, f"{weaker} {top:.3f} is below the threshold {threshold:.3f} ({parts})", **known)
    reach = "reaches" if answerability is None else "both reach"
    return GateDecision(True, threshold, top, True, f"{parts}: {reach} the threshold {threshold:.3f}", **known)
