"""Text extraction from uploaded files. Plain text and Markdown for now."""

from __future__ import annotations

from pathlib import PurePath

SUPPORTED_EXTENSIONS = (".txt", ".md", ".markdown")


class ParseError(Exception):
    """The file cannot be turned into text; the message says why, for a person."""


def check_supported(filename: str) -> None:
    suffix = PurePath(filename).suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        raise ParseError(f"“{filename}” is not a supported type: upload {', '.join(SUPPORTED_EXTENSIONS)} files.")


def extract_text(filename: str, data: bytes) -> str:
    check_supported(filename)
    if b"\x00" in data[:8192]:
        raise ParseError(f"“{filename}” looks binary, not text.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(f"“{filename}” is not valid UTF-8 (byte {exc.start}); save it as UTF-8 and upload again.") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ParseError(f"“{filename}” contains no text.")
    return text
