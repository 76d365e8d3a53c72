"""Plain text and Markdown: decoded as they are, one page."""

from __future__ import annotations

from apps.pipeline.parsing.base import Extracted, ParseError, assemble
from apps.pipeline.parsing.encoding import decode
from apps.pipeline.parsing.kinds import binary, mismatch


def extract_text_file(filename: str, data: bytes) -> Extracted:
    text, encoding = decode_text(filename, data, "text")
    if not text.strip():
        raise ParseError(f"“{filename}” contains no text, only blank space. Check that you picked the right file and upload it again.")
    return assemble("text", [text], encoding)


def decode_text(filename: str, data: bytes, expected: str) -> tuple[str, str]:
    """The text of a file of a text-based kind, its newlines made line feeds; a binary file is refused."""
    if binary(data):
        raise mismatch(filename, data, expected)
    text, encoding = decode(filename, data)
    return text.replace("\r\n", "\n").replace("\r", "\n"), encoding
