"""The local extractive provider: answers only with sentences of the retrieved sources.

Deterministic and always available, so the product works offline and with no keys.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz

from apps.pipeline.text import sentence_spans
from apps.pipeline.types import Answer, Candidate, Claim

INSUFFICIENT = "I do not have sufficient information in this workspace's documents to answer that."


# (question, sentences) → p(each sentence answers the question): the verifier's answerability head.
Answerability = Callable[[str, list[str]], list[float]]


@dataclass(frozen=True)
class ExtractiveParams:
    max_claims: int = 3
    min_similarity: float = 0.35
    # A sentence far less relevant than the best one is padding, not an answer.
    relative_to_best: float = 0.8
    duplicate_ratio: float = 85.0
    max_sentence_chars: int = 600
    # With an answerability model: how many of the most similar sentences it reads, and how
    # likely to answer a sentence must be to be said.
    answer_candidates: int = 8
    min_answerability: float = 0.1


def local_extractive_answer(
    question_vector: np.ndarray,
    sources: list[Candidate],
    embedder,
    params: ExtractiveParams,
    *,
    question: str = "",
    answerability: Answerability | None = None,
) -> Answer:
    """The sources' sentences that answer the question, most likely first: similar to the question
    (embedding), and, with an answerability model, read by it and led by the one that answers."""
    sentences = [(index, s) for index, c in enumerate(sources, 1) for s in _sentences(c.text, params.max_sentence_chars)]
    if not sentences:
        return _insufficient()
    similarities = embedder.embed([s for _, s in sentences]) @ question_vector
    floor = max(params.min_similarity, params.relative_to_best * float(similarities.max()))
    ranked = [int(p) for p in np.argsort(-similarities, kind="stable") if similarities[p] >= floor]
    if answerability is not None and question:
        ranked = _by_answerability(question, sentences, ranked, similarities, answerability, params)
    chosen: list[Claim] = []
    for position in ranked:
        index, sentence = sentences[position]
        if len(chosen) < params.max_claims and not any(fuzz.ratio(sentence, c.quote) >= params.duplicate_ratio for c in chosen):
            chosen.append(Claim(text=sentence, source=index, quote=sentence))
    if not chosen:
        return _insufficient()
    return Answer(text=" ".join(c.text for c in chosen), claims=tuple(chosen), insufficient=False, provider="local")


def _by_answerability(question: str, sentences, ranked: list[int], similarities, answerability: Answerability, params) -> list[int]:
    """The most similar sentences reordered by how likely each answers; those unlikely to dropped."""
    if not ranked:  # nothing is even similar: read the closest few, an answer may still be there
        ranked = [int(p) for p in np.argsort(-similarities, kind="stable")]
    read = ranked[: params.answer_candidates]
    scores = answerability(question, [sentences[p][1] for p in read])
    kept = [(score, p) for score, p in zip(scores, read, strict=True) if score >= params.min_answerability]
    return [p for _, p in sorted(kept, key=lambda item: -item[0])]


def _insufficient() -> Answer:
    return Answer(text=INSUFFICIENT, claims=(), insufficient=True, provider="local")


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
