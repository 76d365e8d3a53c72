"""The trust score: how far to trust an answer, from three components a reader can check."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apps.pipeline.text import sentence_spans
from apps.pipeline.types import Candidate, VerifiedClaim

LOW, MEDIUM, HIGH = "low", "medium", "high"
# A claim whose best-matching source sentence is this similar (cosine) corroborates
# nothing; at the upper bound it is restated.
AGREEMENT_FLOOR, AGREEMENT_CEILING = 0.3, 0.85
UNSAFE_VERDICTS = {"hallucinated_quote", "contradicts"}


@dataclass(frozen=True)
class TrustWeights:
    retrieval: float = 0.4
    agreement: float = 0.3
    grounding: float = 0.3
    low_cutoff: float = 0.75
    medium_cutoff: float = 0.5


@dataclass(frozen=True)
class Trust:
    retrieval: float  # the best relevance among the passages the answer drew on
    agreement: float  # how strongly the retrieved sources, taken together, echo each claim
    grounding: float  # share of claims located in their source and supported by it
    confidence: float
    risk: str
    reasons: tuple[str, ...]


def source_agreement(claims: list[str], sources: list[Candidate], embedder) -> float:
    """Mean over claims of the best cosine between the claim and any sentence of any
    retrieved source, ramped to [0, 1]."""
    sentences = [c.text[s.start : s.end] for c in sources for s in sentence_spans(c.text)]
    if not claims or not sentences:
        return 0.0
    best = (embedder.embed(claims) @ embedder.embed(sentences).T).max(axis=1)
    ramped = np.clip((best - AGREEMENT_FLOOR) / (AGREEMENT_CEILING - AGREEMENT_FLOOR), 0.0, 1.0)
    return round(float(ramped.mean()), 4)


def trust_score(*, retrieval: float | None, agreement: float, verified: list[VerifiedClaim], refused: bool, weights: TrustWeights) -> Trust:
    retrieval = min(max(retrieval or 0.0, 0.0), 1.0)
    if refused:
        # An honest refusal is grounded: it asserts nothing a source would have to back.
        return Trust(retrieval, 1.0, 1.0, 1.0, LOW, ("refused: no claim made",))
    grounding = sum(v.faithful for v in verified) / len(verified) if verified else 0.0
    total = weights.retrieval + weights.agreement + weights.grounding
    confidence = (weights.retrieval * retrieval + weights.agreement * agreement + weights.grounding * grounding) / total
    risk = LOW if confidence >= weights.low_cutoff else MEDIUM if confidence >= weights.medium_cutoff else HIGH
    reasons = [f"confidence {confidence:.0%} against cut-offs {weights.low_cutoff:.0%} / {weights.medium_cutoff:.0%}"]
    unsafe = sorted({v.verdict for v in verified if v.verdict in UNSAFE_VERDICTS})
    if unsafe and risk == LOW:
        risk = MEDIUM
        reasons.append(f"never Low with a claim judged {' / '.join(unsafe)}")
    if not verified:
        risk = HIGH
        reasons.append("no claim to verify")
    return Trust(round(retrieval, 4), round(agreement, 4), round(grounding, 4), round(confidence, 4), risk, tuple(reasons))
