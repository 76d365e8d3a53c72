"""Reranking: one interface, two scorers, every score in [0, 1].

A cross-encoder when RERANKER_MODEL names a loadable local model; otherwise the
local reranker, built on the embedding model at sentence level plus the text.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol

import numpy as np

from apps.pipeline.text import Unit, read_units
from apps.pipeline.types import Candidate

log = logging.getLogger(__name__)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words that carry no topic: a question's coverage is measured on the others.
_STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its "
    "may might no not of on or our should so such than that the their them then there these they this those to "
    "was we were what when where which while who whom why will with would you your about after all also any "
    "because before between both each few more most other over same some under until very".split()
)


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    score: float
    best_sentence: str = ""
    parts: dict = field(default_factory=dict)


class Reranker(Protocol):
    name: str

    def rerank(self, question: str, question_vector: np.ndarray, candidates: list[Candidate]) -> list[Scored]: ...


@dataclass(frozen=True)
class LocalWeights:
    sentence: float = 0.5
    chunk: float = 0.3
    coverage: float = 0.2


class LocalReranker:
    """Best-sentence similarity, whole-chunk similarity and coverage of the question's words.

    Each part is in [0, 1] (negative cosines count as 0), and so is their weighted sum.
    """

    name = "local:sentence-embedding+coverage"

    def __init__(self, embedder, weights: LocalWeights | None = None):
        self.embedder = embedder
        self.weights = weights or LocalWeights()

    def rerank(self, question: str, question_vector: np.ndarray, candidates: list[Candidate]) -> list[Scored]:
        if not candidates:
            return []
        # Sentences, and table rows read under their table's heading line; the best is quoted as is.
        sentences = [read_units(c.text, c.table_header) or [Unit(c.text, c.text)] for c in candidates]
        flat = [unit.read for group in sentences for unit in group]
        # Whole-chunk similarity comes from the stored embedding when retrieval supplied it.
        missing = [c.text for c in candidates if c.cosine is None]
        vectors = self.embedder.embed(flat + missing)
        sentence_sims, embedded = vectors[: len(flat)] @ question_vector, iter(vectors[len(flat) :] @ question_vector)
        chunk_sims = [c.cosine if c.cosine is not None else float(next(embedded)) for c in candidates]
        terms = content_terms(question)
        scored, offset = [], 0
        for candidate, group, chunk_sim in zip(candidates, sentences, chunk_sims, strict=True):
            sims = sentence_sims[offset : offset + len(group)]
            offset += len(group)
            best = int(np.argmax(sims))
            scored.append(self._score(candidate, group[best].quote, float(sims[best]), float(chunk_sim), coverage(terms, candidate.text)))
        return sorted(scored, key=lambda s: (-s.score, s.candidate.chunk_id))

    def _score(self, candidate: Candidate, sentence: str, sentence_sim: float, chunk_sim: float, covered: float) -> Scored:
        w = self.weights
        parts = {"sentence": round(max(sentence_sim, 0.0), 4), "chunk": round(max(chunk_sim, 0.0), 4), "coverage": round(covered, 4)}
        score = w.sentence * parts["sentence"] + w.chunk * parts["chunk"] + w.coverage * parts["coverage"]
        return Scored(candidate, round(min(max(score, 0.0), 1.0), 6), sentence, parts)


class CrossEncoderReranker:
    def __init__(self, model_name_or_path: str):
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(model_name_or_path, device="cpu")
        self.name = f"cross-encoder:{model_name_or_path}"

    def rerank(self, question: str, question_vector: np.ndarray, candidates: list[Candidate]) -> list[Scored]:
        if not candidates:
            return []
        logits = np.asarray(self.model.predict([(question, c.text) for c in candidates], show_progress_bar=False), dtype=np.float64)
        scores = 1.0 / (1.0 + np.exp(-logits.reshape(len(candidates), -1)[:, -1]))
        scored = [Scored(c, round(float(s), 6), "", {"cross_encoder": round(float(s), 4)}) for c, s in zip(candidates, scores, strict=True)]
        return sorted(scored, key=lambda s: (-s.score, s.candidate.chunk_id))


@cache
def get_reranker(model_name_or_path: str, embedder) -> Reranker:
    """The cross-encoder when one is configured and loads; the local reranker otherwise."""
    if model_name_or_path:
        try:
            return CrossEncoderReranker(model_name_or_path)
        except Exception as exc:  # a missing or broken model must not take answering down
            log.warning(
                "RERANKER_MODEL %r did not load (%s: %s); using the local reranker", model_name_or_path, exc.__class__.__name__, exc
            )
    return LocalReranker(embedder)


def content_terms(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1}


def coverage(terms: set[str], text: str) -> float:
    """Share of the question's content words that the passage contains."""
    if not terms:
        return 0.0
    return len(terms & content_terms(text)) / len(terms)


def _stem(word: str) -> str:
    # Enough to match plural and -ing/-ed forms; the embedding parts carry the meaning.
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
