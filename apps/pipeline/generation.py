"""The local extractive provider: answers only with sentences of the retrieved sources.

Deterministic and always available, so the product works offline and with no keys.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz

from apps.pipeline.mentions import root
from apps.pipeline.text import Unit, read_units, row_statement, sentence_spans
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
    """The sources' units (sentences, and table rows read with their table's heading) that answer
    the question, the one that answers first: similar to the question (embedding), holding what
    the question asks for (a figure for "how many", a name for "who"), and, with an answerability
    model, read by it. A question that asks for a figure no similar unit holds is not answered."""
    units = [(index, unit) for index, c in enumerate(sources, 1) for unit in units_of(c, params.max_sentence_chars)]
    units = _rows_named(question, units)
    if not units:
        return _insufficient()
    similarities = embedder.embed([u.read for _, u in units]) @ question_vector
    floor = max(params.min_similarity, params.relative_to_best * float(similarities.max()))
    ranked = [int(p) for p in np.argsort(-similarities, kind="stable") if similarities[p] >= floor]
    wanted = asked_for(question)
    if wanted:
        ranked = [p for p in ranked if holds(units[p][1].quote, wanted, question)]
    if named := _named(question):  # "… in Texas?": the row naming Texas answers, not the unit most like the question
        # Rows only: prose names its subject by a pronoun as often as not ("It was built in 1838").
        share = {p: len(named & _words(units[p][1].quote)) / len(named) if units[p][1].row else 0.0 for p in ranked}
        ranked = sorted(ranked, key=lambda p: -(similarities[p] + NAMED_WEIGHT * share[p]))
        if ranked and units[ranked[0]][1].row and share[ranked[0]] > 0:
            # A table row naming it answers on its own; units that do not name it are padding
            # (prose is left alone: "It was built in 1838" names its subject by a pronoun).
            ranked = [p for p in ranked if share[p] > 0]
    if answerability is not None and question:
        ranked = _by_answerability(question, [(i, u.read) for i, u in units], ranked, similarities, answerability, params)
    chosen: list[Claim] = []
    for position in ranked:
        index, unit = units[position]
        if len(chosen) < params.max_claims and not any(fuzz.ratio(unit.quote, c.quote) >= params.duplicate_ratio for c in chosen):
            chosen.append(Claim(text=_said(unit), source=index, quote=unit.quote))
    if not chosen:
        return _insufficient(wanted)
    return Answer(text=" ".join(c.text for c in chosen), claims=tuple(chosen), insufficient=False, provider="local")


def units_of(candidate: Candidate, max_chars: int) -> list[Unit]:
    """The units a claim may quote: sentences and table rows, but not a table's heading row (it
    heads the rows, it says nothing) nor page furniture — a bare heading, a table-of-contents line
    — and without the heading lines a sentence was run into ("3.1 Methods\nWe train…" quotes
    "We train…"). A unit keeps its reading (and its stored vector); only its quote is cut, and
    what is cut off is its start, so the quote is still a contiguous span of the source."""
    units = read_units(candidate.text, candidate.table_header)
    headings = {u.heading for u in units if u.heading}
    kept = []
    for unit in units:
        quote = unit.quote if unit.row else claimable(unit.quote)
        if quote and len(quote) <= max_chars and unit.quote not in headings:
            kept.append(unit if quote == unit.quote else Unit(quote, unit.read, unit.row))
    return kept


def _said(unit: Unit) -> str:
    """What a claim quoting the unit says: a sentence, itself; a table row, its cells under their
    column headings where they can be matched."""
    return row_statement(unit.quote, unit.heading) if unit.heading else unit.quote


# Dot leaders of a table of contents ("Reports ........ 45", ". . . .").
_LEADER = re.compile(r"(?:\.\s?){4,}|…{2,}")
_NUMBERED = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.|(?:chapter|section|part|appendix)\s+[\dIVXLC]+\b)", re.IGNORECASE)
# Words a title leaves in lower case (English function words).
_TITLE_LOWER = frozenset("a an and as at but by for from in into of on or over per the to under upon via vs with".split())
_HEADING_MAX_WORDS = 8


def claimable(quote: str) -> str | None:
    """What of a prose unit may be quoted as a claim: the unit without the heading lines it opens
    with, or None when nothing but furniture is left."""
    lines = quote.split("\n")
    while len(lines) > 1 and is_heading(lines[0]) and lines[1].lstrip()[:1].isupper():
        lines.pop(0)
    rest = "\n".join(lines).strip()
    if not rest or _LEADER.search(rest) or is_heading(rest):
        return None
    return rest if rest == quote else quote[quote.rindex(rest) :].rstrip()


def is_heading(line: str) -> bool:
    """A line that names a section rather than saying something: short, no sentence punctuation at
    its end and no colon (a caption says something), and numbered, in capitals or in title case."""
    line = line.strip()
    words = line.split()
    if not words or len(words) > _HEADING_MAX_WORDS or line[-1] in ".!?;:,\"'”’)" or ":" in line:
        return False
    if _NUMBERED.match(line):
        return True
    letters = [c for c in line if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return True
    named = [w for w in words if any(c.isalpha() for c in w)]
    return bool(named) and all(w[0].isupper() or w.lower() in _TITLE_LOWER for w in named if w[0].isalpha())


# What a question asks for, by its wording: a measure (a percentage or a decimal), a figure, or a name.
MEASURE, NUMBER, NAME = "a measured figure", "a figure", "a name"
_ASKS_MEASURE = re.compile(
    r"\b(what|which|how high|how low)\b.*\b(percentage|percent|accuracy|f1|precision|recall)\b",
    re.IGNORECASE,
)
_ASKS_NUMBER = re.compile(
    r"\b(how (many|much|long|large|big|old|far|fast|high|low)|in what year|which year|what year"
    r"|what (?!unit\b)(\S+ ){0,3}(number|amount|total|count|size|value|cost|price|population|age|rate|score|ratio|share|proportion|fraction))\b",
    re.IGNORECASE,
)
_MEASURED = re.compile(r"\d+(?:[.,]\d+)?\s?(?:%|percent\b|per cent\b)|\b\d*\.\d+\b", re.IGNORECASE)
# How much naming what the question names counts beside similarity (cosine, in [-1, 1]).
NAMED_WEIGHT = 0.15
_ASKS_NAME = re.compile(r"^\s*(who|whom|whose)\b", re.IGNORECASE)
_FIGURE = re.compile(
    r"\d[\d,.]*|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|sixty|seventy"
    r"|eighty|ninety|hundreds?|thousands?|millions?|billions?|dozens?|half|once|twice|decades?|century|centuries)\b",
    re.IGNORECASE,
)


def asked_for(question: str) -> str | None:
    if _ASKS_MEASURE.search(question):
        return MEASURE
    if _ASKS_NUMBER.search(question):
        return NUMBER
    if _ASKS_NAME.search(question):
        return NAME
    return None


def holds(text: str, wanted: str, question: str) -> bool:
    """Whether `text` holds what the question asks for and does not already say: a figure not in
    the question (a question about "top-20" accuracy is not answered by its 20), or a name."""
    if wanted in (NUMBER, MEASURE):
        found = _MEASURED if wanted == MEASURE else _FIGURE
        known = {_figure(m) for m in found.finditer(question)}
        # A figure opening a line numbers a heading ("3.1 Overview"), it does not answer.
        return any(_figure(m) not in known and m.start() > 0 and text[m.start() - 1] != "\n" for m in found.finditer(text))
    asked = {w.lower() for w in re.findall(r"[^\W\d_]+", question)}
    words = re.findall(r"[^\W\d_]+", text)
    return any(w[0].isupper() and w.lower() not in asked for w in words[1:])


def _named(question: str) -> set[str]:
    """What the question names: its capitalised words after the first ("Texas", "Natural Questions")."""
    words = re.findall(r"[^\W\d_][\w-]*", question)
    return {w.lower() for w in words[1:] if w[0].isupper() and w.lower() not in _NOT_NAMES}


_NOT_NAMES = {"i", "what", "which", "who", "when", "where", "how", "why"}


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[^\W\d_][\w-]*", text)}


def _figure(match: re.Match) -> str:
    return match.group(0).lower().replace(",", "").rstrip(".")


def _rows_named(question: str, units: list[tuple[int, Unit]]) -> list[tuple[int, Unit]]:
    """The prose, and the table rows the question names: a row is about what its own cells name
    ("berries" names the row "Berries | … | 150"); where no row's cells are named, the rows whose
    column headings are ("what is written under Header Col 2")."""
    rows = [unit for _, unit in units if unit.row]
    named = [u for u in rows if _shares_words(question, u.quote)] or [u for u in rows if _shares_words(question, u.read)]
    kept = {id(u) for u in named}
    return [(index, unit) for index, unit in units if not unit.row or id(unit) in kept]


def _shares_words(question: str, text: str) -> bool:
    """Whether the question names a word of the text (in either number: "grains" names the row
    "Grain")."""
    return bool({root(w) for w in _content_words(question)} & {root(w) for w in _content_words(text)})


def _by_answerability(question: str, sentences, ranked: list[int], similarities, answerability: Answerability, params) -> list[int]:
    """The most similar sentences reordered by how likely each answers; those unlikely to dropped."""
    if not ranked:  # nothing is even similar: read the closest few, an answer may still be there
        ranked = [int(p) for p in np.argsort(-similarities, kind="stable")]
    read = ranked[: params.answer_candidates]
    scores = answerability(question, [sentences[p][1] for p in read])
    kept = [(score, p) for score, p in zip(scores, read, strict=True) if score >= params.min_answerability]
    return [p for _, p in sorted(kept, key=lambda item: -item[0])]


def _insufficient(wanted: str | None = None) -> Answer:
    text = INSUFFICIENT if wanted is None else f"{INSUFFICIENT[:-1]}: the passages closest to the question do not state {wanted}."
    return Answer(text=text, claims=(), insufficient=True, provider="local")


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
