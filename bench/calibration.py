"""Platt scaling and reliability tables, for fitting a score into a probability and showing how
well it holds (bench_answering)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np


def platt(scores: Sequence[float], labels: Sequence[bool], *, l2: float = 1e-3, steps: int = 100) -> tuple[float, float]:
    """(slope, intercept) of p = sigmoid(slope * score + intercept) maximising the likelihood of
    `labels`, by Newton's method, with Platt's smoothed targets (no 0/1 certainty from a finite
    sample) and a touch of L2 on the slope so that separable data still give finite numbers, and data
    of one class a flat fit at its smoothed share."""
    x = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    if len(x) == 0:
        raise ValueError("Platt scaling needs examples.")
    positives, negatives = y.sum(), len(y) - y.sum()
    target = np.where(y > 0, (positives + 1) / (positives + 2), 1 / (negatives + 2))
    a, b = 0.0, math.log((positives + 1) / (negatives + 1))
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(a * x + b)))
        w = p * (1 - p)
        grad = np.array([np.sum((p - target) * x) + l2 * a, np.sum(p - target)])
        hess = np.array([[np.sum(w * x * x) + l2, np.sum(w * x)], [np.sum(w * x), np.sum(w) + 1e-9]])
        step = np.linalg.solve(hess, grad)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-9:
            break
    return float(a), float(b)


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


def reliability(probabilities: Sequence[float], labels: Sequence[bool], edges: Sequence[float] = (0, 0.25, 0.5, 0.75, 1.0)) -> list[dict]:
    """Per band of predicted probability: how many, the mean prediction, and the share right."""
    rows = []
    for low, high in itertools.pairwise(edges):
        inside = [(p, y) for p, y in zip(probabilities, labels, strict=True) if low <= p < high or (high == edges[-1] and p == high)]
        rows.append(
            {
                "band": f"{low:.2f}-{high:.2f}",
                "n": len(inside),
                "mean_predicted": round(sum(p for p, _ in inside) / len(inside), 3) if inside else None,
                "share_right": round(sum(y for _, y in inside) / len(inside), 3) if inside else None,
            }
        )
    return rows


def expected_calibration_error(probabilities: Sequence[float], labels: Sequence[bool], bins: int = 10) -> float | None:
    if not probabilities:
        return None
    edges = [i / bins for i in range(bins + 1)]
    total = 0.0
    for row in reliability(probabilities, labels, edges):
        if row["n"]:
            total += row["n"] * abs(row["mean_predicted"] - row["share_right"])
    return round(total / len(probabilities), 4)
