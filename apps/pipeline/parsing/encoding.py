"""Bytes to text for the text-based kinds (plain text, Markdown, CSV, HTML): byte-order marks,
UTF-8, then detection — refusing binary data and mojibake rather than indexing them."""

from __future__ import annotations

import charset_normalizer

from apps.pipeline.parsing.base import ParseError

# UTF-32 first: the UTF-32-LE byte-order mark begins with the UTF-16-LE one.
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
# charset_normalizer's "chaos" is the share of the decoded text that looks like mojibake.
_MAX_CHAOS = 0.2
_MIN_PRINTABLE = 0.95


def decode(filename: str, data: bytes) -> tuple[str, str]:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _decode_with_bom(filename, data, encoding), encoding
    if b"\x00" in data:
        raise ParseError(
            f"“{filename}” contains NUL bytes: it looks like a binary file, not text. "
            "Upload the original document, or save it as plain text (UTF-8)."
        )
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        return _detect(filename, data)


def _decode_with_bom(filename: str, data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise ParseError(
            f"“{filename}” starts like {encoding.upper()} text but is not valid {encoding.upper()}; save it as UTF-8 and upload it again."
        ) from None


def _detect(filename: str, data: bytes) -> tuple[str, str]:
    matches = charset_normalizer.from_bytes(data, threshold=_MAX_CHAOS)
    best = matches.best()
    if best is not None:
        # Single-byte code pages often tie: cp1250 scores as well as cp1252 on French, yet turns "è" into "č".
        # Western European cp1252 is by far the likeliest legacy encoding of an upload, so it wins a tie.
        chosen = next((match for match in matches if _as_good(match, best) and "cp1252" in match.could_be_from_charset), best)
        text = str(chosen)
        if _printable_share(text) >= _MIN_PRINTABLE:
            return text, "cp1252" if "cp1252" in chosen.could_be_from_charset else chosen.encoding
    raise ParseError(f"“{filename}” is not UTF-8 and its encoding could not be detected; save it as UTF-8 and upload it again.")


def _as_good(match, best) -> bool:
    return match.chaos <= best.chaos and match.coherence >= best.coherence


def _printable_share(text: str) -> float:
    sample = text[:100_000]  # enough to tell text from binary, and cheap on a large file
    printable = sum(1 for char in sample if char.isprintable() or char in "\n\r\t\f")
    return printable / max(len(sample), 1)
