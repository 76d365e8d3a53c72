"""The local extractive provider: answers only with sentences of the retrieved sources.

Deterministic and always available, so the product works offline and with no keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz

from apps.pipeline.text import sentence_spans
from apps.pipeline.types import Answer, Candidate, Claim

INSUFFICIENT = "I do not have sufficient information in this workspace's documents to answer that."


@dataclass(frozen=True)
class ExtractiveParams:
    max_claims: int = 3
    min_similarity: float = 0.35
    # A sentence far less relevant than the best one is padding, not an answer.
    relative_to_best: float = 0.8
    duplicate_ratio: float = 85.0
    max_sentence_chars: int = 600


def local_extractive_answer(question_vector: np.ndarray, sources: list[Candidate], embedder, params: ExtractiveParams) -> Answer:
    sentences = [(index, s) for index, c in enumerate(sources, 1) for s in _sentences(c.text, params.max_sentence_chars)]
    if not sentences:
        return Answer(text=INSUFFICIENT, claims=(), insufficient=True, provider="local")
    similarities = embedder.embed([s for _, s in sentences]) @ question_vector
    chosen: list[Claim] = []
    floor = max(params.min_similarity, params.relative_to_best * float(similarities.max()))
    for position in np.argsort(-similarities, kind="stable"):
        if similarities[position] < floor or len(chosen) == params.max_claims:
            break
        index, sentence = sentences[position]
        if not any(fuzz.ratio(sentence, c.quote) >= params.duplicate_ratio for c in chosen):
            chosen.append(Claim(text=sentence, source=index, quote=sentence))
    if not chosen:
        return Answer(text=INSUFFICIENT, claims=(), insufficient=True, provider="local")
    return Answer(text=" ".join(c.text for c in chosen), claims=tuple(chosen), insufficient=False, provider="local")


def _sentences(text: str, max_chars: int) -> list[str]:
    return [text[s.start : s.end] for s in sentence_spans(text) if s.end - s.start <= max_chars]


def cite_sentences(question: str, answer_text: str, sources: list[Candidate], embedder) -> list[Claim]:
    """Claims for an answer written without citations: each of its sentences, quoting the source
    sentence closest to it (read together with the question, so a bare "Delhi" is placed)."""
    statements = [answer_text[s.start : s.end] for s in sentence_spans(answer_text)] or [answer_text.strip()]
    statements = [s for s in statements if s]
    candidates = [(index, s) for index, c in enumerate(sources, 1) for s in _sentences(c.text, max_chars=2000)]
    if not statements or not candidates:
        return []
    vectors = embedder.embed([f"{question} {s}" for s in statements])
    similarity = vectors @ embedder.embed([s for _, s in candidates]).T
    claims = []
    for row, statement in zip(similarity, statements, strict=True):
        # A sentence holding the statement's own words and numbers is where it would come from,
        # even when its meaning is only close: "1948" belongs to the sentence that says 1948.
        words = _content_words(statement)
        overlap = np.array([len(words & _content_words(s)) / len(words) if words else 0.0 for _, s in candidates])
        index, quote = candidates[int(np.argmax(row + overlap))]
        claims.append(Claim(text=statement, source=index, quote=quote))
    return claims


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[^\W_]+", text.lower()) if len(w) > 2 or w.isdigit()}
