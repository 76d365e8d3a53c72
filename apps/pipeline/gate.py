"""The confidence gate: refuse before generating when the best passage is not relevant enough."""

from __future__ import annotations

from dataclasses import dataclass

REFUSAL = "I do not have sufficient information in the documents to answer this."


@dataclass(frozen=True)
class GateDecision:
    enabled: bool
    threshold: float
    top_score: float | None
    passed: bool
    reason: str


def confidence_gate(
    scores: list[float], *, threshold: float, enabled: bool, empty_reason: str = "no passage was retrieved"
) -> GateDecision:
    top = max(scores) if scores else None
    if not enabled:
        return GateDecision(False, threshold, top, True, "gate off (naive mode)")
    if top is None:
        return GateDecision(True, threshold, None, False, empty_reason)
    if top < threshold:
        return GateDecision(True, threshold, top, False, f"top relevance {top:.3f} is below the threshold {threshold:.3f}")
    return GateDecision(True, threshold, top, True, f"top relevance {top:.3f} reaches the threshold {threshold:.3f}")
