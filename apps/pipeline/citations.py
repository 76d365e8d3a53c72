"""Citation marks in the answer text: where each claim stands in the answer, so the text can
carry its source number ([1]) right after it, as a reader of any cited text expects."""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

# A claim reworded a little from the answer text is still placed where it stands.
_PLACED_AT = 85.0


@dataclass(frozen=True)
class Citation:
    claim: int  # 1-based claim number
    source: int  # 1-based source number
    start: int | None  # where the claim's statement stands in the answer text; None when it is not in it
    end: int | None


def place_citations(answer: str, claims: list[dict]) -> list[Citation]:
    """Each claim ({"text", "source"}) placed in the answer: exactly (from where the previous one
    ended), else its best close match; a claim the text does not hold has no place."""
    placed, cursor = [], 0
    for number, claim in enumerate(claims, 1):
        text = (claim.get("text") or "").strip()
        start = answer.find(text, cursor) if text else -1
        if start < 0 and text:
            start = answer.find(text)
        if start >= 0:
            end = start + len(text)
        else:
            start, end = _close_match(answer, text)
        placed.append(Citation(number, int(claim.get("source") or 0), start, end))
        if end is not None:
            cursor = max(cursor, end)
    return placed


def _close_match(answer: str, text: str) -> tuple[int | None, int | None]:
    if not text or not answer:
        return None, None
    found = fuzz.partial_ratio_alignment(text, answer, score_cutoff=_PLACED_AT)
    return (found.dest_start, found.dest_end) if found else (None, None)


def marked_parts(answer: str, citations: list[Citation]) -> list[dict]:
    """The answer cut into parts, each placed claim's part followed by its mark; the marks of
    claims without a place follow the text, in claim order."""
    parts, cursor = [], 0
    placed = sorted((c for c in citations if c.end is not None), key=lambda c: (c.end, c.claim))
    for c in placed:
        if c.end < cursor:  # overlaps the one before: its mark goes with it
            parts.append({"text": "", "claim": c.claim, "source": c.source})
            continue
        parts.append({"text": answer[cursor : c.end], "claim": c.claim, "source": c.source})
        cursor = c.end
    if cursor < len(answer):
        parts.append({"text": answer[cursor:], "claim": None, "source": None})
    parts.extend({"text": " " if parts else "", "claim": c.claim, "source": c.source} for c in citations if c.end is None)
    return parts


def marked_text(answer: str, citations: list[Citation]) -> str:
    """The answer text with each claim's source number after it: "… 48 metres tall [1]."."""
    return "".join(p["text"] + (f" [{p['source']}]" if p["claim"] else "") for p in marked_parts(answer, citations))
