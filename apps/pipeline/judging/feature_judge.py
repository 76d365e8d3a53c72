"""The feature judge, the local judge that needs no provider: it reads the claim against the
passage for the things that turn a close paraphrase into a wrong claim (numbers and units,
negation, opposite directions and antonyms, swapped or unknown entities, hedges,
overgeneralisation), adds the embedder's similarity, and weighs them with a multinomial logistic
regression whose parameters `scripts/train_judge.py` fits on development claims
(`apps/pipeline/judge_model.json`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from apps.pipeline.embedding import get_embedder
from apps.pipeline.judging.features import FEATURES, Reading, feature_matrix
from apps.pipeline.judging.verdicts import JudgeRequest
from apps.pipeline.types import Judgement

MODEL_PATH = Path(__file__).resolve().parent.parent / "judge_model.json"


@dataclass(frozen=True)
class SoftmaxModel:
    """Multinomial logistic regression over standardised features."""

    features: tuple[str, ...]
    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # classes × features
    bias: np.ndarray
    supports_threshold: float  # below this probability, never "supports"

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        logits = ((rows - self.mean) / self.scale) @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)

    def decide(self, probabilities: np.ndarray) -> list[int]:
        supports = self.classes.index("supports")
        decided = []
        for row in probabilities:
            if row[supports] >= self.supports_threshold:
                decided.append(supports)
            else:
                others = row.copy()
                others[supports] = -1.0
                decided.append(int(others.argmax()))
        return decided

    @classmethod
    def load(cls, path: Path) -> SoftmaxModel:
        data = json.loads(path.read_text())
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"{path} was trained on other features; run scripts/train_judge.py")
        return cls(
            features=tuple(data["features"]),
            classes=tuple(data["classes"]),
            mean=np.asarray(data["mean"]),
            scale=np.asarray(data["scale"]),
            weights=np.asarray(data["weights"]),
            bias=np.asarray(data["bias"]),
            supports_threshold=float(data["supports_threshold"]),
        )


class LocalJudge:
    """The judge that needs no provider: lexical cues and embedding similarity, weighed by the
    trained softmax model."""

    name = "local"

    def __init__(self, model: SoftmaxModel, embedder):
        self.model = model
        self.embedder = embedder

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement:
        return self.judge_many([(claim, passage, quote_start, quote_end)])[0]

    def support_probability(self, claim: str, passage: str, quote_start: int, quote_end: int) -> float:
        """The model's probability of `supports`, unthresholded: the confidence gate reads a
        question as a claim against the passage's sentence nearest to it (its answerability)."""
        rows, _, _ = feature_matrix([(claim, passage, quote_start, quote_end)], self.embedder)
        return float(self.model.probabilities(rows)[0][self.model.classes.index("supports")])

    def answerability(self, question: str, passage: str, start: int, end: int) -> float:
        """The gate's answerability with this judge: the question read as a claim against the
        sentence passage[start:end]."""
        return self.support_probability(question, passage, start, end)

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[Judgement]:
        rows, readings, similarities = feature_matrix(requests, self.embedder)
        return [
            Judgement(verdict, rationale(verdict, reading, float(similarity)), score)
            for (verdict, score), reading, similarity in zip(decide(self.model, rows, readings), readings, similarities, strict=True)
        ]


def decide(model: SoftmaxModel, rows: np.ndarray, readings: list[Reading]) -> list[tuple[str, float]]:
    """(verdict, confidence) per feature row. A claim the passage states word for word, neither
    negated nor hedged there, is supported without weighing."""
    probabilities = model.probabilities(rows)
    decided = []
    for p, index, reading in zip(probabilities, model.decide(probabilities), readings, strict=True):
        if reading.restated and not reading.negation_mismatch and not reading.hedge:
            decided.append(("supports", 1.0))
        else:
            decided.append((model.classes[index], round(float(p[index]), 4)))
    return decided


def rationale(verdict: str, reading: Reading, similarity: float) -> str:
    cues = _cues(reading)
    if verdict == "supports" and reading.restated:
        return "the passage states the claim word for word"
    if verdict == "supports":
        return (
            f"the passage says what the claim says (similarity {similarity:.2f}, {reading.recall:.0%} of its content words in the passage)"
        )
    if verdict == "partial" and reading.hedge:
        return f"the passage hedges ('{reading.hedge}') where the claim is certain"
    if verdict == "partial" and reading.overgeneral:
        return f"the claim generalises beyond the passage ({reading.overgeneral})"
    if verdict == "partial" and reading.causal:
        return "the passage reports an association where the claim asserts a cause"
    if verdict == "partial":
        return f"the passage backs only part of the claim ({reading.recall:.0%} of its content words in the passage)"
    if verdict == "contradicts" and cues:
        return "; ".join(cues)
    if verdict == "contradicts":
        return f"the passage states otherwise (similarity {similarity:.2f})"
    return f"the passage does not address the claim (similarity {similarity:.2f}, {reading.recall:.0%} of its content words in the passage)"


def _cues(reading: Reading) -> list[str]:
    cues = []
    if reading.missing_numbers:
        cues.append(f"the passage does not state {', '.join(reading.missing_numbers)}")
    if reading.renumbered and not reading.missing_numbers:
        cues.append(f"the claim says {reading.renumbered[0]} where the passage says {reading.renumbered[1]}")
    if reading.unit_mismatch:
        cues.append(f"the passage gives {', '.join(reading.unit_mismatch)} in other units")
    if reading.negation_mismatch:
        cues.append("one of claim and quote is negated, the other not")
    if reading.opposite:
        cues.append(f"the claim says '{reading.opposite[0]}' where the passage says '{reading.opposite[1]}'")
    if reading.swapped:
        cues.append("the claim swaps the roles of what the passage relates")
    if reading.missing_entities:
        cues.append(f"the passage does not name {', '.join(reading.missing_entities)}")
    return cues


@cache
def get_local_judge() -> LocalJudge:
    """The local judge with the shipped parameters and the product's embedder, each loaded once.

    The parameters were fitted on all-MiniLM-L6-v2 similarities (the default EMBEDDING_MODEL);
    another embedding model shifts the similarity feature, so retrain with it."""
    return LocalJudge(SoftmaxModel.load(MODEL_PATH), get_embedder(*_product_embedder_args()))


def _product_embedder_args() -> tuple:
    """The arguments the product passes to get_embedder, so that the judge shares its instance
    (and the model is loaded once); the defaults outside Django (scripts/train_judge.py)."""
    from django.conf import settings

    if settings.configured:
        return settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE
    return ()
