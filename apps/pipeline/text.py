"""Sentence boundaries and sentence-aware chunking, with offsets into the original text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.pipeline.types import ChunkDraft, Span

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before
# whitespace and an upper-case letter, digit or opening quote; or at a blank line.
_BOUNDARY = re.compile(
    r"""(?<=[.!?])["')\]]*\s+(?=["'(\[]?[A-Z0-9])|\n\s*\n"""
    # Two sentences run together with no space between them, as text pasted or extracted from
    # paragraphs often is ("…founded in 1987.Hot Rod is…", "…"Beowulf".Beowulf is…"): a word
    # of at least two lower-case letters or digits, its full stop, then a capitalised word.
    # "U.S.Army", "St.Louis" and "No.5" stay whole.
    r"""|(?<=[a-z0-9]{2}[.!?])(?=[A-Z][a-z])|(?<=[a-z0-9]["')\]][.!?])(?=[A-Z][a-z])"""
)
_ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "vs.", "dr.", "mr.", "mrs.", "ms.", "fig.", "no.", "al.", "approx."}


# A table row as the parsers write it: DOCX cells joined by " | ", or a PDF line of figures
# (pypdf gives a table row as one line: a label and its cells, mostly numbers).
_CELL_SEPARATOR = " | "
_NUMBER = re.compile(r"^[(\[]?[-+−]?[$€£]?\d[\d,.]*%?[)\]]?[*†‡]*$")
_MIN_NUMERIC_CELLS = 3
# Longer lines are prose or a whole page run together, not a row.
_MAX_ROW_CHARS = 400


def sentence_spans(text: str) -> list[Span]:
    """The units a passage is read, quoted and cited by: its sentences, and each row of a table
    (with the line heading the table) on its own, since rows carry no sentence punctuation."""
    spans: list[Span] = []
    start = 0
    for block_start, block_end in _row_blocks(text):
        _prose_spans(spans, text, start, block_start)
        for line in _lines(text, block_start, block_end):
            _append_trimmed(spans, text, line.start, line.end)
        start = block_end
    _prose_spans(spans, text, start, len(text))
    return spans


@dataclass(frozen=True)
class Unit:
    """A unit of a passage as it is quoted (verbatim) and as it is read against a question: a
    table row is read under its table's heading line."""

    quote: str
    read: str
    row: bool = False

    @property
    def heading(self) -> str | None:
        """The heading line a table row is read under (None for prose, or a row without one)."""
        return self.read[: -len(self.quote) - 1] if self.row and self.read != self.quote else None


def read_units(text: str, header: str | None = None) -> list[Unit]:
    """The passage's sentences and table rows; `header` heads the rows of a table that starts
    before the passage (the search finds it in the document)."""
    units = []
    for span in sentence_spans(text):
        quote = text[span.start : span.end]
        if not is_table_row(quote):
            units.append(Unit(quote, quote))
            continue
        heading = table_header(text, span.start) or header
        units.append(Unit(quote, f"{heading}\n{quote}" if heading and heading != quote else quote, row=True))
    return units


def row_statement(row: str, heading: str | None) -> str:
    """A table row said under its column headings, when each heading can be matched to its cell:
    "Berries — Food: Blueberry, Cranberry; Calories per portion: 150" for the row "Berries |
    Blueberry, Cranberry | 150" under " | Food | Calories per portion". Cells are matched one to
    one: a DOCX row's cells with its heading row's, a PDF row's figures with its heading line's
    columns where the line spaces them apart (after the row's own label, which the first column
    may head). A row whose headings cannot be matched so (a heading line of single-spaced words,
    where "Long Gun" may be one heading or two; a count that differs) is said as it stands: a
    heading put over the wrong cell would say something the table does not."""
    if not heading:
        return row
    if _CELL_SEPARATOR in f" {row} ":
        cells, heads = [c.strip() for c in row.split("|")], [h.strip() for h in heading.split("|")]
        label = cells[0]
    else:
        tokens = row.split()
        at = next((i for i, t in enumerate(tokens) if _NUMBER.match(t)), len(tokens))
        label, cells = " ".join(tokens[:at]), tokens[at:]
        if any(not _NUMBER.match(t) for t in cells):
            return row
        # A heading line's words are one column's heading only where the line spaces its
        # columns apart ("Permit  Handgun  Long Gun"): "Long Gun" is one heading, not two.
        heads = re.split(r"\s{2,}|\t", heading.strip())
        if len(heads) < 2:
            return row
        if len(heads) == len(cells) + 1:
            heads = heads[1:]
        cells, heads = [label, *cells], ["", *heads]
    if len(heads) != len(cells) or len(cells) < 2 or not label or not all(heads[1:]):
        return row
    said = "; ".join(f"{head}: {cell}" for head, cell in zip(heads[1:], cells[1:], strict=True) if cell)
    return f"{label} — {said}" if said else row


def passage_header(text: str, start: int, document: str) -> str | None:
    """The heading line for a passage that opens inside a table whose heading is in an earlier
    passage of `document` (the passage is document[start : start + len(text)]); None otherwise.
    Ingestion and retrieval both ask it, so a row is read the same way by both."""
    first = next(iter(sentence_spans(text)), None)
    if first is None or not is_table_row(text[first.start : first.end]) or table_header(text, first.start) is not None:
        return None
    return table_header(document, start + first.start)


def unit_reads(text: str, header: str | None = None) -> list[str]:
    """What each unit of a passage is read as (and embedded as, once, at ingestion)."""
    return [unit.read for unit in read_units(text, header)]


def first_table_header(text: str) -> str | None:
    """The heading line of the first table in `text` that has one there."""
    for span in sentence_spans(text):
        if is_table_row(text[span.start : span.end]) and (header := table_header(text, span.start)):
            return header
    return None


def is_table_row(line: str) -> bool:
    line = line.strip()
    if not line or len(line) > _MAX_ROW_CHARS:
        return False
    if _CELL_SEPARATOR in f" {line} ":  # a row may start or end with an empty cell
        return True
    tokens = line.split()
    numeric = sum(1 for t in tokens if _NUMBER.match(t))
    return numeric >= _MIN_NUMERIC_CELLS and numeric * 2 >= len(tokens)


def table_header(text: str, row_start: int) -> str | None:
    """The line heading the table that the row at `row_start` belongs to: the first row of a
    table of cells (DOCX), or the line just above a table of figures (PDF). None when the
    table starts before `text` does."""
    lines = list(_lines(text, 0, len(text)))
    at = next((i for i, line in enumerate(lines) if line.start <= row_start < line.end + 1), None)
    if at is None or not is_table_row(text[lines[at].start : lines[at].end]):
        return None
    first = at
    while first > 0 and is_table_row(text[lines[first - 1].start : lines[first - 1].end]):
        first -= 1
    if _CELL_SEPARATOR in text[lines[first].start : lines[first].end] and first < at:
        return text[lines[first].start : lines[first].end].strip()
    if first == 0:
        return None
    above = text[lines[first - 1].start : lines[first - 1].end].strip()
    return above if above and len(above) <= _MAX_ROW_CHARS * 2 else None


def row_heading(text: str, start: int, end: int, header: str | None = None) -> str | None:
    """The heading line of the table row text[start:end]: found in `text`, else `header` (the
    heading of a table that starts before the passage does); None when the span is no row."""
    return (table_header(text, start) or header) if is_table_row(text[start:end]) else None


def with_heading(text: str, start: int, end: int, heading: str | None) -> tuple[str, int, int]:
    """`text` with `heading` put above it where the text does not hold it, the span shifted to match."""
    if not heading or heading in text:
        return text, start, end
    shift = len(heading) + 1
    return f"{heading}\n{text}", start + shift, end + shift


def under_heading(text: str, start: int, end: int, header: str | None = None) -> tuple[str, int, int]:
    """`text` with the span text[start:end] as a judge reads it: a table row under its table's
    heading line; anything else as it is."""
    return with_heading(text, start, end, row_heading(text, start, end, header))


def _prose_spans(spans: list[Span], text: str, start: int, end: int) -> None:
    segment = text[start:end]
    cursor = 0
    for match in _BOUNDARY.finditer(segment):
        tail = segment[cursor : match.start()].rsplit(None, 1)
        if tail and tail[-1].lower() in _ABBREVIATIONS:
            continue
        _append_trimmed(spans, text, start + cursor, start + match.start())
        cursor = match.end()
    _append_trimmed(spans, text, start + cursor, end)


def _lines(text: str, start: int, end: int):
    position = start
    while position < end:
        stop = text.find("\n", position, end)
        stop = end if stop < 0 else stop
        yield Span(position, stop)
        position = stop + 1


def _row_blocks(text: str) -> list[tuple[int, int]]:
    """Where the tables are: runs of at least two row lines, each run taken with the line
    just above it (a table's heading line), as (start, end) offsets."""
    if "\n" not in text:
        return []
    lines = list(_lines(text, 0, len(text)))
    rows = [is_table_row(text[line.start : line.end]) for line in lines]
    blocks: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        if not rows[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and rows[j + 1]:
            j += 1
        if j > i:
            first = (
                i - 1 if i > 0 and text[lines[i - 1].start : lines[i - 1].end].strip() and not _ends_at(blocks, lines[i - 1].start) else i
            )
            blocks.append((lines[first].start, lines[j].end))
        i = j + 1
    return blocks


def _ends_at(blocks: list[tuple[int, int]], position: int) -> bool:
    return bool(blocks) and blocks[-1][1] >= position


def chunk_text(text: str, *, size: int, overlap: int) -> list[ChunkDraft]:
    """Pack whole sentences into chunks of at most `size` characters.

    A sentence longer than `size` is cut into pieces on its own. Each chunk
    after the first starts with the trailing sentences of the previous one
    that fit in `overlap` characters.
    """
    pieces = [piece for span in sentence_spans(text) for piece in _split_long(span, size)]
    chunks: list[ChunkDraft] = []
    current: list[Span] = []
    for piece in pieces:
        if current and piece.end - current[0].start > size:
            chunks.append(_draft(text, len(chunks), current))
            current = _overlap_tail(current, overlap, piece, size)
        current.append(piece)
    if current:
        chunks.append(_draft(text, len(chunks), current))
    return chunks


def _overlap_tail(sentences: list[Span], overlap: int, following: Span, size: int) -> list[Span]:
    tail: list[Span] = []
    for sentence in reversed(sentences):
        if following.end - sentence.start > size or sentences[-1].end - sentence.start > overlap:
            break
        tail.insert(0, sentence)
    return tail


def _split_long(span: Span, size: int) -> list[Span]:
    return [Span(s, min(s + size, span.end)) for s in range(span.start, span.end, size)]


def _draft(text: str, ordinal: int, sentences: list[Span]) -> ChunkDraft:
    start, end = sentences[0].start, sentences[-1].end
    return ChunkDraft(ordinal=ordinal, text=text[start:end], start=start, end=end)


def _append_trimmed(spans: list[Span], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append(Span(start, end))
