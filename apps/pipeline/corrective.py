"""Corrective RAG: judge the retrieved passages, keep only what bears on the question,
and decide whether the web must be asked."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apps.pipeline.rerank import Scored, content_terms
from apps.pipeline.text import read_units

CORRECT, AMBIGUOUS, INCORRECT = "correct", "ambiguous", "incorrect"


@dataclass(frozen=True)
class CorrectiveParams:
    upper: float = 0.55
    lower: float = 0.35
    strip_threshold: float = 0.3


@dataclass(frozen=True)
class Refined:
    """A kept passage and the text the generator sees: its strongest sentences. Quotes are
    still verified against the whole passage, where they stand verbatim."""

    scored: Scored
    text: str
    kept_sentences: int
    total_sentences: int
    whole_chunk: bool


def classify(scores: list[float], params: CorrectiveParams) -> str:
    """Correct when the best passage reaches the upper threshold, Incorrect when it is
    below the lower one (or there is none), Ambiguous in between."""
    top = max(scores, default=None)
    if top is not None and top >= params.upper:
        return CORRECT
    if top is None or top < params.lower:
        return INCORRECT
    return AMBIGUOUS


def keep_for(verdict: str, scored: list[Scored], params: CorrectiveParams) -> list[Scored]:
    """Internal passages worth refining: none when retrieval was Incorrect, else those at
    or above the lower threshold."""
    if verdict == INCORRECT:
        return []
    return [s for s in scored if s.score >= params.lower]


def refine(scored: list[Scored], question_vector: np.ndarray, embedder, params: CorrectiveParams) -> list[Refined]:
    """Strip each kept passage to its units (sentences, and table rows read under their table's
    heading) scoring at or above the strip threshold, in their order, merged back into one text
    (rows stay one to a line); the whole passage when none does."""
    groups = [read_units(s.candidate.text, s.candidate.table_header) for s in scored]
    flat = [unit.read for group in groups for unit in group]
    sims = embedder.embed(flat) @ question_vector if flat else np.zeros(0)
    refined, offset = [], 0
    for item, group in zip(scored, groups, strict=True):
        keep = [unit for unit, sim in zip(group, sims[offset : offset + len(group)], strict=True) if sim >= params.strip_threshold]
        offset += len(group)
        if keep and len(keep) < len(group):
            text = "".join(("\n" if unit.row or (i and keep[i - 1].row) else " ") * bool(i) + unit.quote for i, unit in enumerate(keep))
            refined.append(Refined(item, text, len(keep), len(group), False))
        else:
            refined.append(Refined(item, item.candidate.text, len(group), len(group), True))
    return refined


def keyword_rewrite(question: str) -> str:
    """A web-search query from the question's content words, when no LLM can rewrite it."""
    seen = dict.fromkeys(word for word in question.replace("?", " ").split() if content_terms(word))
    return " ".join(seen) or question
