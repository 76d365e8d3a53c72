"""The trust score: how far to trust an answer, from three components a reader can check."""

from __future__ import annotations

from dataclasses import dataclass

from apps.pipeline.judging.selective import UNSURE
from apps.pipeline.types import SOURCE_DELETED, VerifiedClaim

LOW, MEDIUM, HIGH = "low", "medium", "high"
# A refusal claims nothing: it has no confidence and no risk of a hallucination, only its reason.
REFUSED = "refused"
UNSAFE_VERDICTS = {"hallucinated_quote", "contradicts"}


@dataclass(frozen=True)
class TrustWeights:
    # Relevance says the documents cover the question, which the gate has already required; it
    # cannot tell a right answer from a wrong one to the same question, so the claims' evidence
    # weighs more (bench_trust AUROC 0.939 at 0.4 / 0.3 / 0.3, 0.953 at 0.2 / 0.4 / 0.4, 0.950-0.953
    # for a retrieval weight anywhere from 0.1 to 0.3).
    retrieval: float = 0.2
    agreement: float = 0.4
    grounding: float = 0.4
    low_cutoff: float = 0.75
    medium_cutoff: float = 0.5


@dataclass(frozen=True)
class Trust:
    retrieval: float  # the best relevance among the passages the answer drew on
    agreement: float | None  # how strongly the cited sources back each claim, by the judge's belief
    grounding: float | None  # share of claims located in their source and supported by it (an unsure one counts its p)
    confidence: float | None  # None for a refusal, which claims nothing
    risk: str  # low / medium / high, or refused
    reasons: tuple[str, ...]
    # p(the answer answers the question): its best-answering claim's (apps/pipeline/answering.py);
    # None where no claim was read against the question or the scorer is not calibrated.
    answering: float | None = None


def source_agreement(verified: list[VerifiedClaim]) -> float:
    """How strongly the sources back the answer: the mean over claims of the judge's belief that
    the cited passage supports the claim — its confidence when it says `supports`, the rest of
    its belief otherwise — and nothing for a quote that is not in its source. Unlike grounding,
    which counts verdicts, it keeps how sure each verdict was."""
    if not verified:
        return 0.0
    return round(sum(_support(v) for v in verified) / len(verified), 4)


def _support(v: VerifiedClaim) -> float:
    if v.location.status != "located":
        return 0.0
    score = 1.0 if v.judge_score is None else min(max(v.judge_score, 0.0), 1.0)
    return score if v.verdict == "supports" else 1.0 - score


def _grounded(v: VerifiedClaim) -> float:
    """A claim's share in grounding: 1 when faithful, 0 when not; a claim the local judge left
    unsure is neither, and counts with its calibrated p(supports)."""
    if v.outcome == UNSURE and v.p_supports is not None:
        return v.p_supports
    return float(v.faithful)


def trust_score(
    *,
    retrieval: float | None,
    agreement: float,
    verified: list[VerifiedClaim],
    refused: bool,
    weights: TrustWeights,
    answering: float | None = None,
) -> Trust:
    """Confidence = the weighted mean of the three components: is what the answer says backed by its
    sources. Low risk also needs `answering`, where it is known, at the Low cut-off: an answer is
    right only when it is backed *and* is what was asked, so a faithful claim that does not answer
    cannot make an answer Low risk. (Multiplying the two into one confidence was measured and
    dropped: the scorer ranks right above wrong answers too weakly, and the product took bench_trust
    from AUROC 0.953 to 0.791.)"""
    retrieval = min(max(retrieval or 0.0, 0.0), 1.0)
    if refused:
        # Nothing was claimed: there is no answer to be confident in, and a meter reading 100 %
        # would be read as "certainly right". The best relevance stays, as evidence.
        return Trust(round(retrieval, 4), None, None, None, REFUSED, ("refused: no claim made, so no confidence is given",))
    grounding = sum(_grounded(v) for v in verified) / len(verified) if verified else 0.0
    total = weights.retrieval + weights.agreement + weights.grounding
    backed = (weights.retrieval * retrieval + weights.agreement * agreement + weights.grounding * grounding) / total
    confidence = backed
    risk = LOW if confidence >= weights.low_cutoff else MEDIUM if confidence >= weights.medium_cutoff else HIGH
    reasons = [f"confidence {confidence:.0%} against cut-offs {weights.low_cutoff:.0%} / {weights.medium_cutoff:.0%}"]
    if answering is not None:
        reasons.append(f"the best-answering claim answers the question {answering:.0%}")
        if risk == LOW and answering < weights.low_cutoff:
            risk = MEDIUM
            reasons.append(f"never Low while it may not answer the question (Low needs {weights.low_cutoff:.0%})")
    unsafe = sorted({v.verdict for v in verified if v.verdict in UNSAFE_VERDICTS and v.outcome != UNSURE})
    if unsafe and risk == LOW:
        risk = MEDIUM
        reasons.append(f"never Low with a claim judged {' / '.join(unsafe)}")
    if unsure := sum(v.outcome == UNSURE for v in verified):
        if risk == LOW:
            risk = MEDIUM
        reasons.append(f"{unsure} of {len(verified)} claim(s) not checked by the local judge: read their quotes")
    if unchecked := sum(v.verdict == SOURCE_DELETED for v in verified):
        if risk == LOW:
            risk = MEDIUM
        reasons.append(f"{unchecked} of {len(verified)} claim(s) cannot be checked: their document was deleted")
    if not verified:
        risk = HIGH
        reasons.append("no claim to verify")
    answered = None if answering is None else round(answering, 4)
    return Trust(round(retrieval, 4), round(agreement, 4), round(grounding, 4), round(confidence, 4), risk, tuple(reasons), answered)
