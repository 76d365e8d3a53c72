"""What a file's content is, whatever its name says: the kind it can be read as, what to call it
in a message, and the message for a file whose content does not match its extension."""

from __future__ import annotations

import re

from apps.pipeline.parsing.base import ZIP_MAGIC, ParseError, zip_names
from apps.pipeline.parsing.encoding import decode

KIND_NAMES = {
    "pdf": "a PDF",
    "docx": "a Word document (DOCX)",
    "text": "a text file",
    "html": "a web page (HTML)",
    "xlsx": "an Excel workbook (XLSX)",
    "csv": "a CSV file",
    "pptx": "a PowerPoint presentation (PPTX)",
}
EXTENSION_OF_KIND = {"pdf": ".pdf", "docx": ".docx", "text": ".txt", "html": ".html", "xlsx": ".xlsx", "pptx": ".pptx"}
# The part each Office kind cannot do without, and the folder all its parts live in.
OFFICE_PARTS = {"docx": ("word/document.xml", "word/"), "xlsx": ("xl/workbook.xml", "xl/"), "pptx": ("ppt/presentation.xml", "ppt/")}
# Readers accept the %PDF- header anywhere in the first kilobyte (some generators prepend junk); it must
# start a line, so that a text file merely mentioning "%PDF-1.7" is not taken for a PDF.
_PDF_HEADER = re.compile(rb"(?:^|[\r\n])%PDF-\d")
_PDF_HEADER_WINDOW = 1024
_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# Office saves a password-protected DOCX, XLSX or PPTX as a compound file holding these two streams.
_ENCRYPTED_OFFICE = ("EncryptionInfo".encode("utf-16-le"), "EncryptedPackage".encode("utf-16-le"))
# Formats people mistake for documents; recognised so the message can say what the file really is.
_SIGNATURES = (
    (_CFB_MAGIC, "an old-format Office file (.doc, .xls or .ppt)"),
    (b"{\\rtf", "an RTF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "a program"),
)
_HTML_START = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]", re.IGNORECASE | re.DOTALL)


def sniff_kind(data: bytes) -> str | None:
    """Return "pdf", "docx", "xlsx", "pptx", "html" or "text" judging by the content alone; None for
    anything else. A CSV file is text: nothing in its content sets it apart."""
    if not data:
        return None
    if is_pdf(data):
        return "pdf"
    if data.startswith(ZIP_MAGIC):
        names = zip_names(data) or set()
        return next((kind for kind, (main, _) in OFFICE_PARTS.items() if main in names), None)
    if signature(data):
        return None
    try:
        decode("", data)
    except ParseError:
        return None
    return "html" if looks_like_html(data) else "text"


def is_pdf(data: bytes) -> bool:
    return _PDF_HEADER.search(data[:_PDF_HEADER_WINDOW]) is not None


def looks_like_html(data: bytes) -> bool:
    return _HTML_START.match(data[:4096].lstrip(b"\xef\xbb\xbf")) is not None


def signature(data: bytes) -> str | None:
    return next((what for magic, what in _SIGNATURES if data.startswith(magic)), None)


def is_encrypted_office(data: bytes) -> bool:
    return data.startswith(_CFB_MAGIC) and all(name in data for name in _ENCRYPTED_OFFICE)


def binary(data: bytes) -> bool:
    """Content no text-based kind can be: a PDF, a ZIP archive or a known binary format."""
    return is_pdf(data) or data.startswith(ZIP_MAGIC) or signature(data) is not None


def describe(data: bytes) -> str:
    if is_pdf(data):
        return "a PDF document"
    if data.startswith(ZIP_MAGIC):
        return _describe_zip(zip_names(data))
    if what := signature(data):
        return what
    kind = sniff_kind(data)
    return {"text": "plain text", "html": "a web page (HTML)"}.get(kind or "", "binary data of an unknown type")


def _describe_zip(names: set[str] | None) -> str:
    if names is None:
        return "a damaged ZIP archive"
    for kind, (_, folder) in OFFICE_PARTS.items():
        if any(name.startswith(folder) for name in names):
            return KIND_NAMES[kind]
    return "a ZIP archive"


def mismatch(filename: str, data: bytes, expected: str) -> ParseError:
    found = describe(data)
    actual = sniff_kind(data)
    if actual and actual != expected:
        advice = f"Rename it to {EXTENSION_OF_KIND[actual]} and upload it again."
    else:
        advice = "Save it as a PDF, Word, Excel, PowerPoint, HTML, CSV or plain text file and upload that instead."
    return ParseError(f"“{filename}” does not match its extension: it is {found}, not {KIND_NAMES[expected]}. {advice}")


def encrypted_office(filename: str, expected: str) -> ParseError:
    return ParseError(
        f"“{filename}” is {KIND_NAMES[expected]} protected with a password, so it cannot be read. "
        "Open it, remove the password (File › Info › Protect) and upload the unprotected copy."
    )
