"""The combined local judge: the feature judge's softmax model with the verifier's probabilities
as three more features.

Stage 2 reads, for each located quote, the feature judge's lexical cues and similarities
(`apps.pipeline.judging.features.feature_matrix`) and the verifier's p(supports / contradicts / not_found)
on the quote with a sentence either side (`VerifierJudge.support_probabilities`), and weighs them
with one softmax model (`judge_combined.json`, fitted by `scripts/train_judge.py --with-verifier`
on the feature judge's training groups). The gate's answerability is read as the feature judge
reads it, the question as a claim against the passage's sentence, through the same model. (A blend
of both judges' answerability fitted on TrecQA was tried and refused far fewer unanswerable
questions: the verifier was trained on those very pairs; docs/verifier.md.)
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from apps.pipeline.judging.feature_judge import LocalJudge, SoftmaxModel, decide, get_local_judge, rationale
from apps.pipeline.judging.features import FEATURES, VERIFIER_FEATURES, feature_matrix
from apps.pipeline.judging.verdicts import JudgeRequest
from apps.pipeline.types import Judgement
from apps.pipeline.verifier_judge import VerifierJudge, get_verifier_judge

COMBINED_MODEL_PATH = Path(__file__).with_name("judge_combined.json")


def verifier_columns(verifier: VerifierJudge, requests: Sequence[JudgeRequest]) -> np.ndarray:
    """One row of VERIFIER_FEATURES per request, as the verifier judge reads the quote's window."""
    probabilities = verifier.support_probabilities(requests)
    return np.asarray([[p[name.removeprefix("verifier_")] for name in VERIFIER_FEATURES] for p in probabilities], dtype=np.float64)


def combined_rows(requests: Sequence[JudgeRequest], embedder, verifier: VerifierJudge) -> tuple[np.ndarray, list, np.ndarray]:
    """feature_matrix's rows with the verifier's columns appended (FEATURES + VERIFIER_FEATURES)."""
    rows, readings, similarities = feature_matrix(requests, embedder)
    return np.hstack([rows, verifier_columns(verifier, requests)]), readings, similarities


class CombinedJudge:
    """Lexical cues, similarities and the verifier's reading, weighed by one softmax model."""

    name = "combined"

    def __init__(self, model: SoftmaxModel, features: LocalJudge, verifier: VerifierJudge):
        if model.features != FEATURES + VERIFIER_FEATURES:
            raise ValueError("the combined judge needs a model fitted with the verifier's features (train_judge.py --with-verifier)")
        self.model = model
        self.features = features
        self.verifier = verifier

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement:
        return self.judge_many([(claim, passage, quote_start, quote_end)])[0]

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[Judgement]:
        rows, readings, similarities = combined_rows(requests, self.features.embedder, self.verifier)
        supports = rows[:, len(FEATURES) + VERIFIER_FEATURES.index("verifier_supports")]
        judgements = []
        for (verdict, score), reading, similarity, p in zip(
            decide(self.model, rows, readings), readings, similarities, supports, strict=True
        ):
            reason = rationale(verdict, reading, float(similarity))
            judgements.append(Judgement(verdict, f"{reason}; the verifier's p(supports) {p:.2f}", score))
        return judgements

    def support_probability(self, claim: str, passage: str, quote_start: int, quote_end: int) -> float:
        rows, _, _ = combined_rows([(claim, passage, quote_start, quote_end)], self.features.embedder, self.verifier)
        return float(self.model.probabilities(rows)[0][self.model.classes.index("supports")])

    def answerability(self, question: str, passage: str, start: int, end: int) -> float:
        """The question read as a claim against the sentence passage[start:end]."""
        return self.support_probability(question, passage, start, end)


@cache
def get_combined_judge(verifier_path: str, threads: int | None = None, path: Path = COMBINED_MODEL_PATH) -> CombinedJudge:
    """The combined judge with the shipped parameters, sharing the feature judge (and so the
    product's embedder) and the verifier at `verifier_path`, each loaded once."""
    return CombinedJudge(SoftmaxModel.load(path), get_local_judge(), get_verifier_judge(verifier_path, threads))
