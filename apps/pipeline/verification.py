"""Claim verification in two stages.

Stage 1 locates each quote in its cited source with no model call: normalised exact match,
then the quote's sentences and the pieces around an ellipsis, each exact and in order, then
rapidfuzz `partial_ratio` at or above the threshold. Offsets always point into the original
text. A quote that is not located is a `hallucinated_quote` and is never judged; when another
retrieved source holds it, the claim records where (misattributed).

Stage 2 hands the judge the located quote with the sentences around it, and nothing else.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from functools import lru_cache

from rapidfuzz import fuzz

from apps.pipeline.judging.cues import numbers_in, polarity_words, words
from apps.pipeline.judging.selective import DEFAULT_TARGET_PRECISION, claim_outcome
from apps.pipeline.judging.verdicts import Judge, judge_all
from apps.pipeline.text import row_heading, sentence_spans, with_heading
from apps.pipeline.types import SOURCE_DELETED, Answer, Candidate, Claim, Judgement, Location, VerifiedClaim

_QUOTES = str.maketrans(
    {
        "‘": "'",
        "’": "'",
        "‚": "'",
        "‛": "'",
        "′": "'",
        "`": "'",
        "´": "'",
        "“": '"',
        "”": '"',
        "„": '"',
        "‟": '"',
        "″": '"',
        "«": '"',
        "»": '"',
    }
)
_DASHES = str.maketrans(dict.fromkeys("‐‑‒–—―−", "-"))
# A word hyphenated across a line break ("verifi-\ncation") is one word again.
_LINE_BREAK_HYPHEN = re.compile(r"(?<=[^\W\d_])[-\u00ad\u2010\u2011][ \t]*\r?\n\s*(?=[^\W\d_A-Z])")
# "...", "[...]" or "(...)" inside a quote marks text the quoter left out.
_ELLIPSIS = re.compile(r"\s*[\[(]?\.\.\.[\])]?\s*")
_EDGE_ELLIPSIS = re.compile(r"^[\[(]?\.\.\.[\])]?|[\[(]?\.\.\.[\])]?$")
_WRAPPING = " \"'"
CONTEXT_SENTENCES = 1  # the judge sees the quote's sentences and this many on either side


@lru_cache(maxsize=512)
def normalise_with_map(text: str) -> tuple[str, tuple[int, ...]]:
    """Lower-cased NFKC text without accents or invisible characters, with uniform quotes,
    dashes and single spaces, and line-break hyphenation undone; and for each of its
    characters the offset it came from in `text`. Remembered: an answer's claims mostly cite
    the same few sources."""
    skipped = {i for m in _LINE_BREAK_HYPHEN.finditer(text) for i in range(m.start(), m.end())}
    out: list[str] = []
    origin: list[int] = []
    for offset, char in enumerate(text):
        if offset in skipped:
            continue
        for piece in _fold(char):
            if piece.isspace():
                if not out or out[-1] == " ":
                    continue
                piece = " "
            out.append(piece)
            origin.append(offset)
    while out and out[-1] == " ":
        out.pop()
        origin.pop()
    return "".join(out), tuple(origin)


@lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    folded = unicodedata.normalize("NFKC", char).lower().translate(_QUOTES).translate(_DASHES)
    decomposed = unicodedata.normalize("NFD", folded)
    return "".join(c for c in decomposed if unicodedata.category(c) not in ("Mn", "Cf"))


def locate_quote(quote: str, source: str, threshold: float) -> Location:
    needle = _EDGE_ELLIPSIS.sub("", normalise_with_map(quote)[0].strip(_WRAPPING)).strip(_WRAPPING)
    haystack, origin = normalise_with_map(source)
    if not needle or not haystack:
        return Location(status="hallucinated_quote", method="none", score=0.0, detail="empty quote or source")
    # A quote may end with a full stop where the source sentence goes on.
    for candidate in dict.fromkeys((needle, needle.rstrip("."))):
        found = haystack.find(candidate)
        if found >= 0 and candidate:
            return _located("exact", 100.0, origin, found, found + len(candidate))
    pieces = _pieces(quote)
    if len(pieces) > 1 and (span := _in_order(pieces, haystack)):
        return _located("elided", 100.0, origin, *span)
    return _fuzzy(needle, haystack, origin, threshold)


def _located(method: str, score: float, origin: tuple[int, ...], start: int, end: int) -> Location:
    return Location("located", method, score, origin[start], origin[end - 1] + 1)


def _pieces(quote: str) -> list[str]:
    """The quote's sentences, cut again at each ellipsis, normalised: a quote may join sentences
    that are not adjacent in the source, or leave words out."""
    pieces = []
    for span in sentence_spans(quote):
        sentence = normalise_with_map(quote[span.start : span.end])[0]
        pieces += [p.strip(_WRAPPING) for p in _ELLIPSIS.split(sentence) if p.strip(_WRAPPING + ".")]
    return pieces


def _in_order(pieces: list[str], haystack: str) -> tuple[int, int] | None:
    start = cursor = -1
    for piece in pieces:
        found = haystack.find(piece.strip(), cursor + 1)
        if found < 0:
            return None
        start = found if start < 0 else start
        cursor = found + len(piece.strip())
    return start, cursor


def _fuzzy(needle: str, haystack: str, origin: tuple[int, ...], threshold: float) -> Location:
    if len(needle) > len(haystack):
        # partial_ratio would align the source inside the quote: only part of the quote found.
        score, start, end = fuzz.ratio(needle, haystack), 0, len(haystack)
    else:
        alignment = fuzz.partial_ratio_alignment(needle, haystack)
        score, start, end = alignment.score, alignment.dest_start, alignment.dest_end
    score = round(score, 2)
    start, end = _widen_to_words(haystack, start, end)
    if score < threshold or end <= start:
        return Location(status="hallucinated_quote", method="none", score=score)
    differs = _meaning_differs(needle, haystack[start:end])
    if differs:
        return Location(status="hallucinated_quote", method="none", score=score, detail=differs)
    return _located("fuzzy", score, origin, start, end)


def _widen_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    while 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    while start < end and text[start] == " ":
        start += 1
    while end > start and text[end - 1] == " ":
        end -= 1
    return start, end


def _meaning_differs(quote: str, found: str) -> str:
    """Fuzzy matching forgives typography, spelling and OCR slips, not a changed number, negation
    or direction, nor one word put for another: such a quote is not the source's text."""
    if Counter(numbers_in(quote)) != Counter(numbers_in(found)):
        return f"the closest source text has other numbers ({', '.join(numbers_in(found)) or 'none'})"
    if polarity_words(quote) != polarity_words(found):
        return "the closest source text differs in negation or direction words"
    quoted, source = words(quote), words(found)
    for op, q0, q1, s0, s1 in SequenceMatcher(None, quoted, source, autojunk=False).get_opcodes():
        if op != "replace":
            continue
        for ours, theirs in zip(quoted[q0:q1], source[s0:s1], strict=False):
            if ours.isalpha() and theirs.isalpha() and max(len(ours), len(theirs)) >= 4 and fuzz.ratio(ours, theirs) < 60:
                return f"the closest source text says '{theirs}' where the quote says '{ours}'"
    return ""


def verify_answer(
    answer: Answer,
    sources: list[Candidate],
    *,
    locator_threshold: float,
    judge: Judge,
    gone: frozenset[int] = frozenset(),
    target: float = DEFAULT_TARGET_PRECISION,
) -> list[VerifiedClaim]:
    """Both stages for every claim; the judge sees only located quotes.
    A claim citing a source in `gone` (its document deleted) is `source_deleted`, not checked.
    Each located claim's outcome (verified, flagged or unsure) is decided at the target precision."""
    located = [
        _deleted(claim, sources) if claim.source in gone else _stage_one(claim, sources, locator_threshold) for claim in answer.claims
    ]
    to_judge = [s for s in located if s.location.status == "located"]
    judgements = iter(judge_all(judge, [s.judge_request() for s in to_judge]))
    return [s.verified(next(judgements), judge.name, target) if s.location.status == "located" else s.unjudged() for s in located]


def is_verbatim(claim: str, quote: str) -> bool:
    """Whether the claim says its quote word for word (case, typography and a final full stop aside)."""
    return normalise_with_map(claim)[0].rstrip(".") == normalise_with_map(quote)[0].rstrip(".")


@dataclass(frozen=True)
class _Located:
    claim: Claim
    source: Candidate | None
    location: Location  # offsets within the source's text

    def judge_request(self) -> tuple[str, str, int, int]:
        text, start, end = self.source.text, self.location.start, self.location.end
        window_start, window_end = passage_window(text, start, end)
        # A table row is read under its column headings (a claim may say its cells by them).
        heading = row_heading(text, start, end, self.source.table_header)
        return self.claim.text, *with_heading(text[window_start:window_end], start - window_start, end - window_start, heading)

    def verified(self, judgement: Judgement, judge_name: str, target: float) -> VerifiedClaim:
        shifted = replace(self.location, start=self.source.start + self.location.start, end=self.source.start + self.location.end)
        faithful = judgement.verdict == "supports"
        decided_by = judgement.judge or judge_name
        verbatim = is_verbatim(self.claim.text, self.source.text[self.location.start : self.location.end])
        outcome, p = claim_outcome(decided_by, judgement.verdict, judgement.score, verbatim=verbatim, target=target)
        return VerifiedClaim(
            self.claim,
            self.source.document_title,
            shifted,
            judgement.verdict,
            faithful,
            decided_by,
            judgement.rationale,
            judgement.score,
            outcome=outcome,
            p_supports=p,
        )

    def unjudged(self) -> VerifiedClaim:
        title = self.source.document_title if self.source else "(no such source)"
        if self.location.status == SOURCE_DELETED:
            return VerifiedClaim(self.claim, title, self.location, SOURCE_DELETED, False, rationale=self.location.detail)
        why = self.location.detail or f"the quote is not in the cited source (closest match scores {self.location.score:g})"
        return VerifiedClaim(self.claim, title, self.location, "hallucinated_quote", False, rationale=why)


def _deleted(claim: Claim, sources: list[Candidate]) -> _Located:
    cited = sources[claim.source - 1] if 1 <= claim.source <= len(sources) else None
    detail = "the cited document was deleted: this claim cannot be checked"
    return _Located(claim, cited, Location(status=SOURCE_DELETED, method="none", score=0.0, detail=detail))


def _stage_one(claim: Claim, sources: list[Candidate], threshold: float) -> _Located:
    cited = sources[claim.source - 1] if 1 <= claim.source <= len(sources) else None
    if cited is None:
        location = Location(status="hallucinated_quote", method="none", score=0.0, detail="the cited source does not exist")
    else:
        location = locate_quote(claim.quote, cited.text, threshold)
    if location.status != "located":
        location = _look_elsewhere(claim, sources, location, threshold)
    return _Located(claim, cited, location)


def _look_elsewhere(claim: Claim, sources: list[Candidate], missing: Location, threshold: float) -> Location:
    best: tuple[int, Candidate, Location] | None = None
    for index, other in enumerate(sources, start=1):
        if index == claim.source:
            continue
        found = locate_quote(claim.quote, other.text, threshold)
        if found.status == "located" and (best is None or found.score > best[2].score):
            best = (index, other, found)
    if best is None:
        return missing
    index, other, found = best
    return replace(
        missing,
        detail=f"misattributed: the quote is in source {index}, not in the cited source",
        found_in=index,
        found_start=other.start + found.start,
        found_end=other.start + found.end,
    )


def passage_window(text: str, start: int, end: int, context: int = CONTEXT_SENTENCES) -> tuple[int, int]:
    """The sentences that hold text[start:end], widened by `context` sentences on either side."""
    spans = sentence_spans(text)
    inside = [i for i, span in enumerate(spans) if span.end > start and span.start < end]
    if not inside:
        return start, end
    first, last = max(0, inside[0] - context), min(len(spans) - 1, inside[-1] + context)
    return min(spans[first].start, start), max(spans[last].end, end)
