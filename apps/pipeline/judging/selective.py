"""Calibrated p(supports) and the three outcomes it gives a claim.

A judge's own score is not a probability: a model that says "supports" at 0.6 may be right about
such claims half the time. `Calibration` maps a judge's score to the share of claims with that score
that were faithful on a calibration split (isotonic regression, pool-adjacent-violators), and keeps
how many faithful and unfaithful claims each step held, so that the thresholds for any target
precision come from counts, not from a hand-set number:

- *verified*: p at or above the lowest step whose claims and every claim above it were faithful at
  the target precision;
- *flagged*: p at or below the highest step whose claims and every claim below it were unfaithful
  at the target precision (and, before any score, a quote that is not located);
- *unsure*: between the two — what the local judge cannot tell; never "not supported".
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

VERIFIED, FLAGGED, UNSURE = "verified", "flagged", "unsure"
DEFAULT_TARGET_PRECISION = 0.95
# The fewest calibration claims a threshold may rest on.
MIN_CLAIMS = 20
CALIBRATION_PATH = Path(__file__).resolve().parent.parent / "data" / "judge_calibration.json"


@dataclass(frozen=True)
class Thresholds:
    target: float
    verify: float | None  # p at or above which a claim is verified; None: no claim can be
    flag: float | None  # p at or below which a claim is flagged; None: no score flags


@dataclass(frozen=True)
class Calibration:
    """A step function from a judge's score to p(supports): step i holds the scores up to
    `bounds[i]` (the last step everything above), with `faithful[i]` and `unfaithful[i]` claims of
    the calibration split, and p = their share faithful."""

    bounds: tuple[float, ...]
    faithful: tuple[int, ...]
    unfaithful: tuple[int, ...]

    @property
    def values(self) -> tuple[float, ...]:
        return tuple(f / (f + u) for f, u in zip(self.faithful, self.unfaithful, strict=True))

    def probability(self, score: float) -> float:
        return self.values[min(bisect_left(self.bounds, score), len(self.bounds) - 1)]

    def thresholds(self, target: float = DEFAULT_TARGET_PRECISION) -> Thresholds:
        values = self.values
        verify = _reach(list(zip(values, self.faithful, self.unfaithful, strict=True))[::-1], target)
        flag = _reach(list(zip(values, self.unfaithful, self.faithful, strict=True)), target)
        return Thresholds(target, verify, flag)

    def to_json(self) -> dict:
        return {"bounds": [round(b, 6) for b in self.bounds], "faithful": list(self.faithful), "unfaithful": list(self.unfaithful)}

    @classmethod
    def from_json(cls, data: dict) -> Calibration:
        return cls(tuple(data["bounds"]), tuple(data["faithful"]), tuple(data["unfaithful"]))


def _reach(steps: list[tuple[float, int, int]], target: float) -> float | None:
    """Walking the steps from one end, the value of the last step at which the claims walked so
    far are still right at the target share, once there are MIN_CLAIMS of them (a step of two
    claims, both faithful, says nothing about a precision of 0.95); None when none is."""
    right = total = 0
    reached = None
    for value, good, bad in steps:
        right, total = right + good, total + good + bad
        if right / total < target:
            break
        if total >= MIN_CLAIMS:
            reached = value
    return reached


def fit(scores: Sequence[float], faithful: Sequence[bool]) -> Calibration:
    """Isotonic regression of faithfulness on score (pool adjacent violators): each step the mean
    of a run of claims sorted by score, steps never falling as the score rises."""
    if not scores:
        raise ValueError("calibration needs claims")
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    blocks: list[list[float]] = []  # [highest score, faithful, unfaithful]
    for i in order:
        blocks.append([scores[i], int(faithful[i]), int(not faithful[i])])
        while len(blocks) > 1 and _share(blocks[-2]) >= _share(blocks[-1]):
            high, good, bad = blocks.pop()
            blocks[-1] = [high, blocks[-1][1] + good, blocks[-1][2] + bad]
    return Calibration(tuple(b[0] for b in blocks), tuple(b[1] for b in blocks), tuple(b[2] for b in blocks))


def _share(block: list[float]) -> float:
    return block[1] / (block[1] + block[2])


def outcome(probability: float | None, thresholds: Thresholds) -> str:
    """Verified, flagged or unsure, for a claim whose located quote the judge gave p(supports);
    None (a quote not located) is flagged."""
    if probability is None:
        return FLAGGED
    if thresholds.verify is not None and probability >= thresholds.verify:
        return VERIFIED
    if thresholds.flag is not None and probability <= thresholds.flag:
        return FLAGGED
    return UNSURE


def claim_outcome(judge: str, verdict: str, confidence: float | None, *, verbatim: bool, target: float) -> tuple[str, float | None]:
    """(outcome, calibrated p(supports)) of a located claim: a claim that is its quote word for
    word is verified; an LLM's verdict, or an uncalibrated judge's, decides (supports verifies,
    anything else flags); a calibrated local judge's p decides at the target's thresholds, and
    between them the claim is unsure."""
    if verbatim:
        return VERIFIED, None
    calibration = calibrations().get(judge)
    if calibration is None:
        return (VERIFIED if verdict == "supports" else FLAGGED), None
    p = calibration.probability(judge_score(verdict, 1.0 if confidence is None else confidence))
    return outcome(p, calibration.thresholds(target)), round(p, 4)


# The name the local judge grades under (and is calibrated under).
LOCAL_JUDGE_NAME = "verifier"


def unsure_share(judge: str, target: float) -> float | None:
    """The share of the calibration claims that the judge would leave unsure at the target (what
    a target means, shown where it is set); None for a judge without a calibration."""
    calibration = calibrations().get(judge)
    if calibration is None:
        return None
    thresholds = calibration.thresholds(target)
    steps = list(zip(calibration.values, calibration.faithful, calibration.unfaithful, strict=True))
    unsure = sum(f + u for value, f, u in steps if outcome(value, thresholds) == UNSURE)
    return unsure / sum(f + u for _, f, u in steps)


def judge_score(verdict: str, confidence: float) -> float:
    """A local judge's belief that the quote supports the claim, from its verdict and its
    confidence in it."""
    return confidence if verdict == "supports" else 1.0 - confidence


@cache
def calibrations(path: Path = CALIBRATION_PATH) -> dict[str, Calibration]:
    """Each local judge's calibration, by judge name, as `manage.py calibrate_judges --write` fitted it."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: Calibration.from_json(entry["calibration"]) for name, entry in data["judges"].items()}
