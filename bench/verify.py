"""bench_verify's scoring: claims with gold labels against what the verifier decided.

Unfaithful is the positive class: a claim is predicted unfaithful when its quote is not
located or its verdict is anything but `supports`; gold unfaithful unless the quote is
verbatim and the label `supports` (BENCHMARKS.md).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from apps.pipeline.judging.selective import FLAGGED, UNSURE, VERIFIED, Calibration, judge_score
from apps.pipeline.types import VerifiedClaim
from bench.calibration import expected_calibration_error
from bench.common import auroc


@dataclass(frozen=True)
class GoldClaim:
    id: str
    source_id: str
    claim: str
    quote: str
    label: str  # supports | partial | contradicts | not_found
    quote_status: str  # verbatim | fabricated

    @property
    def faithful(self) -> bool:
        return self.quote_status == "verbatim" and self.label == "supports"

    @property
    def verdict(self) -> str:
        """The five-way gold verdict: a fabricated quote is a hallucinated quote whatever the label."""
        return "hallucinated_quote" if self.quote_status == "fabricated" else self.label

    @property
    def category(self) -> str:
        return f"{self.quote_status}/{self.label}"


def gold_from_json(row: dict) -> GoldClaim:
    return GoldClaim(
        id=str(row["id"]),
        source_id=str(row["source_id"]),
        claim=row["claim"],
        quote=row["quote"],
        label=row["label"],
        quote_status=row["quote_status"],
    )


def verify_metrics(golds: list[GoldClaim], predicted: list[VerifiedClaim]) -> dict:
    tp = fp = tn = fn = 0
    verdicts_right = 0
    per_category: dict[str, list[bool]] = defaultdict(list)
    for gold, claim in zip(golds, predicted, strict=True):
        unfaithful, flagged = not gold.faithful, not claim.faithful
        tp += unfaithful and flagged
        fp += flagged and not unfaithful
        tn += not flagged and not unfaithful
        fn += unfaithful and not flagged
        verdicts_right += claim.verdict == gold.verdict
        per_category[gold.category].append(unfaithful == flagged)
    n = len(golds)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "n": n,
        "accuracy": _round((tp + tn) / n if n else 0.0),
        "hallucination_precision": _round(precision),
        "hallucination_recall": _round(recall),
        "hallucination_f1": _round(f1),
        "verdict_accuracy": _round(verdicts_right / n if n else 0.0),
        "confusion": {"tp": tp, "fp": fp, "tn": tn, "fn": fn},
        "per_category": {name: _round(sum(hits) / len(hits)) for name, hits in sorted(per_category.items())},
    }


def _round(value: float) -> float:
    return round(value, 4)


def judge_probabilities(predicted: list[VerifiedClaim], calibration: Calibration | None) -> list[float | None]:
    """Each claim's p(supports): its judge's belief (`judge_score`), calibrated where the judge
    has a calibration; None for a claim whose quote was not located (it never reached a judge)."""
    scores: list[float | None] = []
    for claim in predicted:
        if claim.location.status != "located":
            scores.append(None)
            continue
        score = judge_score(claim.verdict, claim.judge_score or 0.0)
        scores.append(calibration.probability(score) if calibration else score)
    return scores


def selective_metrics(golds: list[GoldClaim], probabilities: list[float | None], outcomes: list[str]) -> dict:
    """BENCHMARKS.md's `auroc`, `ece` and `selective` (of the claims' verified / flagged / unsure
    outcomes); a claim whose quote was not located counts with p = 0."""
    p = [0.0 if q is None else q for q in probabilities]
    faithful = [g.faithful for g in golds]
    verified = [f for f, o in zip(faithful, outcomes, strict=True) if o == VERIFIED]
    flagged = [f for f, o in zip(faithful, outcomes, strict=True) if o == FLAGGED]
    n_faithful = sum(faithful)
    return {
        "auroc": auroc([q for q, f in zip(p, faithful, strict=True) if f], [q for q, f in zip(p, faithful, strict=True) if not f]),
        "ece": expected_calibration_error(p, faithful),
        "selective": {
            "verified_precision": _round(sum(verified) / len(verified)) if verified else None,
            "verified_recall": _round(sum(verified) / n_faithful) if n_faithful else None,
            "flagged_precision": _round(sum(not f for f in flagged) / len(flagged)) if flagged else None,
            "unsure_rate": _round(outcomes.count(UNSURE) / len(outcomes)) if outcomes else None,
        },
    }


COVERAGE_SHARES = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)


def risk_coverage(scores: list[float], faithful: list[bool], shares: tuple[float, ...] = COVERAGE_SHARES) -> list[dict]:
    """Precision of "verified" against the share of claims verified: the claims ranked by the
    judge's score, the top share of them verified (what a lower target buys and costs)."""
    ranked = [f for _, f in sorted(zip(scores, faithful, strict=True), key=lambda pair: -pair[0])]
    curve = []
    for share in shares:
        n = max(1, round(share * len(ranked)))
        curve.append({"verified_share": share, "claims": n, "verified_precision": _round(sum(ranked[:n]) / n)})
    return curve if ranked else []
