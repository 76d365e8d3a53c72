"""Page furniture: the running heads and feet a paged document repeats on its pages (a journal's
name and issue, a report's title, "Page 3 of 12"), which would otherwise be glued to the
sentences they interrupt in chunks and claims, and be found by retrieval on every page.

A line is furniture when it opens or closes its page (among the first or last few lines with
text) and the same line, with its digits read as any digits, stands there on at least half of the
document's pages with text, and on at least three. Nothing is named: no word list, no pattern of
a publisher; a document of fewer than three pages keeps every line. The first page that has such a line keeps
it.
"""

from __future__ import annotations

import re
from collections import Counter

EDGE_LINES = 2  # lines with text, at each end of a page, that can be a running head or foot
LEAST_PAGES = 3
SHARE_OF_PAGES = 0.5

_DIGITS = re.compile(r"\d+")


def strip_running_lines(pages: list[str]) -> list[str]:
    """The pages without the lines they repeat at their edges; each page otherwise as it was."""
    with_text = [page for page in pages if page.strip()]
    if len(with_text) < LEAST_PAGES:
        return pages
    edges = [{_key(line, index) for line in _edge_lines(page)} for index, page in enumerate(pages)]
    counts = Counter(key for keys in edges for key in keys)
    needed = max(LEAST_PAGES, SHARE_OF_PAGES * len(with_text))
    repeated = {key for key, count in counts.items() if count >= needed}
    if not repeated:
        return pages
    # Each line stays where it is first met (a title, a table's heading row that the following
    # pages repeat) and goes from the pages that repeat it.
    cleaned, seen = [], set()
    for index, (page, keys) in enumerate(zip(pages, edges, strict=True)):
        cleaned.append(_without(page, index, repeated & seen))
        seen |= keys & repeated
    return cleaned


def _key(line: str, page_index: int) -> str:
    """What a line is compared by: its words with any digits read alike ("Page 3 of 12"); a line
    of a few letters or none (a date, a figure in a table) only as it is, so that data that
    happens to open or close a page is never taken for furniture; a bare number by its distance
    from the page's index, so that page numbers counting up with the pages are one line."""
    text = " ".join(line.split()).casefold()
    bare = text.strip("-–— ")
    if bare.isdigit() and len(bare) <= 5:
        return f"page number {int(bare) - page_index}"
    if sum(character.isalpha() for character in text) < 3:
        return text
    return _DIGITS.sub("#", text)


def _edge_lines(page: str) -> list[str]:
    """The lines with text at the page's top and bottom; none on a page of a few lines, where
    every line is at an edge (a slide, a form) and a repeated one is as likely content."""
    lines = [line for line in page.split("\n") if line.strip()]
    return lines[:EDGE_LINES] + lines[-EDGE_LINES:] if len(lines) > 2 * EDGE_LINES else []


def _without(page: str, index: int, repeated: set[str]) -> str:
    lines = page.split("\n")
    text_rows = [i for i, line in enumerate(lines) if line.strip()]
    if not repeated or len(text_rows) <= 2 * EDGE_LINES:
        return page
    edges = set(text_rows[:EDGE_LINES] + text_rows[-EDGE_LINES:])
    kept = [line for i, line in enumerate(lines) if not (i in edges and _key(line, index) in repeated)]
    return "\n".join(kept).strip("\n")
