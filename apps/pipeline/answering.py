"""Whether each claim answers the question: the half of "is this answer right" that verification
cannot see.

Verification asks whether a claim is faithful to its quote. An extractive claim quotes its own
sentence, so it is always faithful — also when it is the wrong sentence: one about the question's
subject that does not say what was asked. Trust that counted only faithfulness labelled such
answers Low risk. So each located claim is also read against the question: the sentence it quotes,
with a neighbour either side, scored by the local answer scorer (`Scorer`), and that score turned
into the probability that an answer led by such a claim is right (`Calibration`, fitted on
answers the pipeline gave to questions with known answers: `manage.py bench_answering`).

An answer answers as well as its best-answering claim does (one claim that answers is enough; the
others may be context), and the trust score labels an answer Low risk only when that probability
is at the Low cut-off too: an answer is right when what it says is supported *and* it is what was
asked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from apps.pipeline.types import Candidate, VerifiedClaim
from apps.pipeline.verification import passage_window

# (question, passage, start, end) -> a raw score that passage[start:end], read with its
# neighbours, answers the question: higher is more likely; not a probability until calibrated.
Scorer = Callable[[str, str, int, int], float]

CALIBRATION_PATH = Path(__file__).resolve().parent / "data" / "answering.json"


@dataclass(frozen=True)
class Calibration:
    """p(right) = sigmoid(slope * score + intercept) for one scorer (Platt scaling: two numbers
    fitted on held-out answers, smooth where the data are thin)."""

    scorer: str
    slope: float
    intercept: float

    def __call__(self, score: float) -> float:
        z = self.slope * score + self.intercept
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    @classmethod
    def load(cls, scorer: str, path: Path = CALIBRATION_PATH) -> Calibration | None:
        """The calibration fitted for `scorer`, or None where none was (its claims then carry their
        raw score and trust does not weigh it: an unfitted score is no probability)."""
        if not path.exists():
            return None
        fitted = json.loads(path.read_text()).get("scorers", {}).get(scorer)
        return cls(scorer, float(fitted["slope"]), float(fitted["intercept"])) if fitted else None


@dataclass(frozen=True)
class AnswerReader:
    """A scorer with its name and its calibration (None where none was fitted for it)."""

    name: str
    score: Scorer
    calibration: Calibration | None

    @classmethod
    def of(cls, name: str, score: Scorer, path: Path = CALIBRATION_PATH) -> AnswerReader:
        return cls(name, score, Calibration.load(name, path))

    def read(self, question: str, verified: Sequence[VerifiedClaim], sources: Sequence[Candidate]) -> list[VerifiedClaim]:
        return read_claims(question, verified, sources, self.score, self.calibration)


def read_claims(
    question: str, verified: Sequence[VerifiedClaim], sources: Sequence[Candidate], scorer: Scorer, calibration: Calibration | None
) -> list[VerifiedClaim]:
    """`verified` with each located claim's answer score and, when calibrated, its probability of
    answering. A claim whose quote was not located (or whose document is gone) is not read: it
    cannot answer from a sentence that is not there."""
    read = []
    for v in verified:
        source = sources[v.claim.source - 1] if 1 <= v.claim.source <= len(sources) else None
        if v.location.status != "located" or source is None or v.location.start is None or v.location.end is None:
            read.append(v)
            continue
        start, end = v.location.start - source.start, v.location.end - source.start
        if not 0 <= start < end <= len(source.text):
            read.append(v)
            continue
        score = round(float(scorer(question, source.text, start, end)), 6)
        read.append(replace(v, answer_score=score, answers=None if calibration is None else round(calibration(score), 4)))
    return read


def answering(verified: Sequence[VerifiedClaim]) -> float | None:
    """How likely the answer answers the question: its best-answering claim's probability (None
    when no claim has one)."""
    known = [v.answers for v in verified if v.answers is not None]
    return max(known) if known else None


def window(passage: str, start: int, end: int) -> str:
    """The sentence passage[start:end] with a neighbour either side, as a scorer reads it."""
    first, last = passage_window(passage, start, end, context=1)
    return passage[first:last]
