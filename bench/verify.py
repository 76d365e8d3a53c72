"""bench_verify's scoring: claims with gold labels against what the verifier decided.

Unfaithful is the positive class: a claim is predicted unfaithful when its quote is not
located or its verdict is anything but `supports`; gold unfaithful unless the quote is
verbatim and the label `supports` (BENCHMARKS.md).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from apps.pipeline.types import VerifiedClaim


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
