"""Stage 1 of claim verification: locate each quote in its cited source, no model call."""

from __future__ import annotations

import unicodedata

from rapidfuzz import fuzz

from apps.pipeline.types import Answer, Candidate, Location, VerifiedClaim

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"', "«": '"', "»": '"'})
_DASHES = str.maketrans({c: "-" for c in "‐‑‒–—―−"})


def normalise_with_map(text: str) -> tuple[str, list[int]]:
    """Lower-cased NFKC text with uniform quotes, dashes and single spaces,
    and for each of its characters the offset it came from in `text`."""
    out: list[str] = []
    origin: list[int] = []
    for offset, char in enumerate(text):
        for piece in unicodedata.normalize("NFKC", char).lower().translate(_QUOTES).translate(_DASHES):
            if piece.isspace():
                if not out or out[-1] == " ":
                    continue
                piece = " "
            out.append(piece)
            origin.append(offset)
    while out and out[-1] == " ":
        out.pop()
        origin.pop()
    return "".join(out), origin


def locate_quote(quote: str, source: str, threshold: float) -> Location:
    needle, _ = normalise_with_map(quote)
    haystack, origin = normalise_with_map(source)
    if not needle or not haystack:
        return Location(status="hallucinated_quote", method="none", score=0.0)
    found = haystack.find(needle)
    if found >= 0:
        return Location("located", "exact", 100.0, origin[found], origin[found + len(needle) - 1] + 1)
    alignment = fuzz.partial_ratio_alignment(needle, haystack)
    if alignment is not None and alignment.score >= threshold and alignment.dest_end > alignment.dest_start:
        start, end = origin[alignment.dest_start], origin[alignment.dest_end - 1] + 1
        return Location("located", "fuzzy", round(alignment.score, 2), start, end)
    score = 0.0 if alignment is None else round(alignment.score, 2)
    return Location(status="hallucinated_quote", method="none", score=score)


def verify_answer(answer: Answer, sources: list[Candidate], *, locator_threshold: float) -> list[VerifiedClaim]:
    return [_verify(claim, sources, locator_threshold) for claim in answer.claims]


def _verify(claim, sources: list[Candidate], threshold: float) -> VerifiedClaim:
    if not 1 <= claim.source <= len(sources):
        missing = Location(status="hallucinated_quote", method="none", score=0.0)
        return VerifiedClaim(claim, "(no such source)", missing, "hallucinated_quote", False)
    source = sources[claim.source - 1]
    location = locate_quote(claim.quote, source.text, threshold)
    if location.status != "located":
        return VerifiedClaim(claim, source.document_title, location, "hallucinated_quote", False)
    # Until the support judge lands (stage 2), only a claim that restates its
    # located quote word for word is known to be supported by it.
    restates = normalise_with_map(claim.text)[0] == normalise_with_map(claim.quote)[0]
    verdict = "supports" if restates else "not_judged"
    judge = "verbatim" if restates else "none"
    located = Location(location.status, location.method, location.score, source.start + location.start, source.start + location.end)
    return VerifiedClaim(claim, source.document_title, located, verdict, restates, judge)
