"""The local judge: TrustRAG's own trained verifier, for stage 2 of verification and the gate's
answerability, both offline. (The local extractive provider picks its sentences by similarity: read
one sentence at a time, this model's answerability favoured the sentence naming the question's
subject over the one answering it.)

The model (`apps.pipeline.verifier.Verifier`, trained by `training/verifier/`) reads short pairs
only: the located quote against the claim, and a sentence with a neighbour either side against the
question. Deterministic checks (a number the passage does not state or states otherwise, a
negation on one side only, swapped roles) can veto `supports` in the tentative verdict; the
outcome (verified / flagged / unsure) is decided on the calibrated p(supports) alone
(`judging.selective`, docs/verifier.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from apps.pipeline.judging.checks import check
from apps.pipeline.judging.verdicts import JudgeRequest
from apps.pipeline.text import is_table_row, row_heading, with_heading
from apps.pipeline.types import Judgement
from apps.pipeline.verification import is_verbatim, passage_window
from apps.pipeline.verifier import Verifier


@dataclass(frozen=True)
class VerifierParams:
    supports_threshold: float = 0.5  # p(supports) at or above which a located quote supports its claim
    checks: bool = True  # deterministic vetoes on numbers, negation and swapped roles
    # Sentences either side of a quote the support head reads: none. On the calibration half of
    # the development claims the quote alone ranked better (SciFact AUROC 0.729 against 0.681 with a
    # sentence either side: the window's words crowd the 128 word pieces, cutting the quote's end).
    support_context: int = 0
    answer_context: int = 1  # sentences either side of the sentence the answerability head reads


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
        pairs = [(self._quote_read(passage, start, end), claim) for claim, passage, start, end in requests]
        return self.verifier.support(pairs)

    def support_probability(self, claim: str, passage: str, quote_start: int, quote_end: int) -> float:
        return self.support_probabilities([(claim, passage, quote_start, quote_end)])[0]["supports"]

    def answerability(self, question: str, passage: str, start: int, end: int) -> float:
        """p(the sentence passage[start:end], with its neighbours — or the table row, under its
        heading line — answers the question), by the answerability head. (Reading the question as
        a claim with the support head instead ranked SQuAD 2.0 dev pairs a little better, AUROC 0.650
        against 0.603, but in the product it refused 20 of docqa's 44 answerable questions against
        9: docs/verifier.md.)"""
        if is_table_row(passage[start:end]):  # a row is read under its heading line, as a claim's is
            read = self._quote_read(passage, start, end)
        else:
            read = self._window(passage, start, end, self.params.answer_context)
        return self.answerabilities(question, [read])[0]

    def answerabilities(self, question: str, sentences: Sequence[str]) -> list[float]:
        return self.verifier.answerability([(sentence, question) for sentence in sentences])

    def _quote_read(self, passage: str, start: int, end: int) -> str:
        """What the support head reads for a quote: the quote's sentences (with
        `support_context` either side), a table row under its table's heading line."""
        first, last = passage_window(passage, start, end, self.params.support_context)
        return with_heading(passage[first:last], start - first, end - first, row_heading(passage, start, end))[0]

    @staticmethod
    def _window(passage: str, start: int, end: int, context: int) -> str:
        first, last = passage_window(passage, start, end, context)
        return passage[first:last]

    def _decide(self, request: JudgeRequest, p: dict[str, float]) -> Judgement:
        """The verdict, with 1 − p(supports) as the confidence of any verdict but `supports`, so that
        the calibration ranks every claim on p(supports) (`selective.judge_score`)."""
        claim, passage, start, end = request
        if is_verbatim(claim, passage[start:end]):  # no model needed: the passage says it word for word
            return Judgement("supports", "the passage states the claim word for word", 1.0)
        veto = self._veto(request) if self.params.checks else ""
        if p["supports"] >= self.params.supports_threshold and not veto:
            return Judgement("supports", f"the verifier reads the claim in the passage (p {p['supports']:.2f})", round(p["supports"], 4))
        if veto:
            verdict = "not_found" if veto.startswith("the passage does not state") else "contradicts"
            return Judgement(verdict, veto, round(1 - p["supports"], 4))
        if p["contradicts"] > p["not_found"]:
            return Judgement(
                "contradicts", f"the verifier reads the passage against the claim (p {p['contradicts']:.2f})", round(1 - p["supports"], 4)
            )
        return Judgement(
            "not_found", f"the passage does not state the claim (p(supports) {p['supports']:.2f})", round(1 - p["supports"], 4)
        )

    @staticmethod
    def _veto(request: JudgeRequest) -> str:
        """Why the passage cannot support the claim, read without a model (`judging.checks`)."""
        return check(*request).veto()


@cache
def get_verifier_judge(path: str, threads: int | None = None) -> VerifierJudge:
    """The verifier judge for the weights at `path`, loaded once per process."""
    return VerifierJudge(Verifier.load(Path(path), threads=threads))


def get_local_judge() -> VerifierJudge:
    """The product's local judge: the weights at settings.VERIFIER_PATH (the shipped model by
    default), run with settings.VERIFIER_THREADS threads, loaded once per process."""
    from django.conf import settings

    return get_verifier_judge(str(settings.VERIFIER_PATH), settings.VERIFIER_THREADS)
