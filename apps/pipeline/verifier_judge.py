"""TrustRAG's own verifier as the local judge: stage 2 of verification, the gate's
answerability and the extractive provider's choice of sentences, all offline.

The model (`apps.pipeline.verifier.Verifier`, trained by `training/verifier/`) reads short pairs
only: the located quote with a sentence either side against the claim, and a sentence with its
neighbours against the question. The cheap deterministic checks of the feature judge (a number the
passage does not state or states otherwise, a negation on one side only, swapped roles) can veto
`supports`, each where it was measured to add accuracy (docs/verifier.md, the model card).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from apps.pipeline.judging.features import lexical_features
from apps.pipeline.judging.verdicts import JudgeRequest
from apps.pipeline.types import Judgement
from apps.pipeline.verification import passage_window
from apps.pipeline.verifier import Verifier


@dataclass(frozen=True)
class VerifierParams:
    supports_threshold: float = 0.5  # p(supports) at or above which a located quote supports its claim
    checks: bool = True  # deterministic vetoes on numbers, negation and swapped roles
    context_sentences: int = 1  # sentences either side of the quote (or of the answering sentence)


class VerifierJudge:
    """The local judge: the verifier's support head over the quote's window, with vetoes."""

    name = "verifier"

    def __init__(self, verifier: Verifier, params: VerifierParams | None = None):
        self.verifier = verifier
        self.params = params or VerifierParams()

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement:
        return self.judge_many([(claim, passage, quote_start, quote_end)])[0]

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[Judgement]:
        probabilities = self.support_probabilities(requests)
        return [self._decide(request, p) for request, p in zip(requests, probabilities, strict=True)]

    def support_probabilities(self, requests: Sequence[JudgeRequest]) -> list[dict[str, float]]:
        pairs = [(self._window(passage, start, end), claim) for claim, passage, start, end in requests]
        return self.verifier.support(pairs)

    def support_probability(self, claim: str, passage: str, quote_start: int, quote_end: int) -> float:
        return self.support_probabilities([(claim, passage, quote_start, quote_end)])[0]["supports"]

    def answerability(self, question: str, passage: str, start: int, end: int) -> float:
        """p(the sentence passage[start:end], with its neighbours, answers the question)."""
        return self.verifier.answerability([(self._window(passage, start, end), question)])[0]

    def answerabilities(self, question: str, sentences: Sequence[str]) -> list[float]:
        return self.verifier.answerability([(sentence, question) for sentence in sentences])

    def _window(self, passage: str, start: int, end: int) -> str:
        first, last = passage_window(passage, start, end, self.params.context_sentences)
        return passage[first:last]

    def _decide(self, request: JudgeRequest, p: dict[str, float]) -> Judgement:
        veto = self._veto(request) if self.params.checks else ""
        if p["supports"] >= self.params.supports_threshold and not veto:
            return Judgement("supports", f"the verifier reads the claim in the passage (p {p['supports']:.2f})", round(p["supports"], 4))
        if veto:
            verdict = "not_found" if veto.startswith("the passage does not state") else "contradicts"
            return Judgement(verdict, veto, round(1 - p["supports"], 4))
        if p["contradicts"] > p["not_found"]:
            return Judgement(
                "contradicts", f"the verifier reads the passage against the claim (p {p['contradicts']:.2f})", round(p["contradicts"], 4)
            )
        return Judgement(
            "not_found", f"the passage does not state the claim (p(supports) {p['supports']:.2f})", round(1 - p["supports"], 4)
        )

    @staticmethod
    def _veto(request: JudgeRequest) -> str:
        """Why the passage cannot support the claim, read without a model: a number it states
        otherwise or not at all, a negation on one side only, the claim's roles swapped."""
        _, reading = lexical_features(*request)
        if reading.renumbered:
            return f"the claim says {reading.renumbered[0]} where the passage says {reading.renumbered[1]}"
        if reading.missing_numbers:
            return f"the passage does not state {', '.join(reading.missing_numbers)}"
        if reading.negation_mismatch:
            return "one of claim and quote is negated, the other not"
        if reading.swapped:
            return "the claim swaps the roles of what the passage relates"
        return ""


@cache
def get_verifier_judge(path: str, threads: int | None = None) -> VerifierJudge:
    """The verifier judge for the weights at `path`, loaded once per process."""
    return VerifierJudge(Verifier.load(Path(path), threads=threads))
