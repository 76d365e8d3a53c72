"""Sentence boundaries and sentence-aware chunking, with offsets into the original text."""

from __future__ import annotations

import re

from apps.pipeline.types import ChunkDraft, Span

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before
# whitespace and an upper-case letter, digit or opening quote; or at a blank line.
_BOUNDARY = re.compile(r"""(?<=[.!?])["')\]]*\s+(?=["'(\[]?[A-Z0-9])|\n\s*\n""")
_ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "vs.", "dr.", "mr.", "mrs.", "ms.", "fig.", "no.", "al.", "approx."}


def sentence_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        tail = text[start : match.start()].rsplit(None, 1)
        if tail and tail[-1].lower() in _ABBREVIATIONS:
            continue
        _append_trimmed(spans, text, start, match.start())
        start = match.end()
    _append_trimmed(spans, text, start, len(text))
    return spans


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
