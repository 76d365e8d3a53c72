"""Text extraction from uploaded files: PDF, Word (DOCX), plain text and Markdown.

The kind of a file is read from its content, and a file whose content does not
match its extension is refused, so a mislabelled upload fails with a message a
person can act on instead of being indexed as garbage. Every ParseError names
the file and says what to do.
"""

from __future__ import annotations

import bisect
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import PurePath

import charset_normalizer
import docx
from docx.table import Table
from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError

SUPPORTED_EXTENSIONS = (".pdf", ".docx", ".txt", ".md", ".markdown")
_KIND_OF_EXTENSION = {".pdf": "pdf", ".docx": "docx", ".txt": "text", ".md": "text", ".markdown": "text"}
_KIND_NAMES = {"pdf": "a PDF", "docx": "a Word document (DOCX)", "text": "a text file"}
_EXTENSION_OF_KIND = {"pdf": ".pdf", "docx": ".docx", "text": ".txt"}

PAGE_SEPARATOR = "\n\n"
_ZIP_MAGIC = b"PK\x03\x04"
_DOCX_MAIN_PART = "word/document.xml"
# Readers accept the %PDF- header anywhere in the first kilobyte (some generators prepend junk); it must
# start a line, so that a text file merely mentioning "%PDF-1.7" is not taken for a PDF.
_PDF_HEADER = re.compile(rb"(?:^|[\r\n])%PDF-\d")
_PDF_HEADER_WINDOW = 1024
# Formats people mistake for documents; recognised so the message can say what the file really is.
_SIGNATURES = (
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old-format Office file (.doc, .xls or .ppt)"),
    (b"{\\rtf", "an RTF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "a program"),
)
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
# A legitimate DOCX part compresses perhaps 10–50×; deflate tops out near 1000×, which only zip bombs reach.
_MAX_RATIO = 200
_RATIO_CHECK_FROM_BYTES = 1024 * 1024


class ParseError(Exception):
    """The file cannot be turned into text; the message says why, and what to do, for a person."""


@dataclass(frozen=True)
class Page:
    number: int  # 1-based
    start: int  # offset of the page's first character in Extracted.text
    end: int  # offset just past its last character


@dataclass(frozen=True)
class Extracted:
    kind: str  # "pdf" | "docx" | "text", from the content
    text: str  # pages joined with PAGE_SEPARATOR
    pages: tuple[Page, ...]
    encoding: str | None = None  # for text files, the encoding used

    @property
    def page_count(self) -> int:
        return len(self.pages)

    def page_of(self, offset: int) -> int:
        """The page holding this character; a separator between pages counts as the page before it."""
        if not 0 <= offset <= len(self.text):
            raise ValueError(f"offset {offset} is outside the text (0–{len(self.text)})")
        return bisect.bisect_right(self.pages, offset, key=lambda page: page.start)


def check_supported(filename: str) -> None:
    if PurePath(filename).suffix.lower() not in SUPPORTED_EXTENSIONS:
        raise ParseError(
            f"“{filename}” is not a supported type: upload a PDF (.pdf), a Word document (.docx) "
            f"or a text or Markdown file ({', '.join(SUPPORTED_EXTENSIONS[2:])})."
        )


def sniff_kind(data: bytes) -> str | None:
    """Return "pdf", "docx" or "text" judging by the content alone; None for anything else."""
    if not data:
        return None
    if _is_pdf(data):
        return "pdf"
    if data.startswith(_ZIP_MAGIC):
        names = _zip_names(data)
        return "docx" if names and _DOCX_MAIN_PART in names else None
    if _signature(data):
        return None
    try:
        _decode("", data)
    except ParseError:
        return None
    return "text"


def extract(filename: str, data: bytes, *, max_unzipped_bytes: int = 200 * 1024 * 1024) -> Extracted:
    check_supported(filename)
    if not data:
        raise ParseError(f"“{filename}” is empty (0 bytes). Check that you picked the right file and upload it again.")
    expected = _KIND_OF_EXTENSION[PurePath(filename).suffix.lower()]
    if expected == "pdf":
        return _extract_pdf(filename, data)
    if expected == "docx":
        return _extract_docx(filename, data, max_unzipped_bytes)
    return _extract_text_file(filename, data)


def _assemble(kind: str, texts: list[str], encoding: str | None = None) -> Extracted:
    pages, start = [], 0
    for number, text in enumerate(texts, start=1):
        pages.append(Page(number=number, start=start, end=start + len(text)))
        start += len(text) + len(PAGE_SEPARATOR)
    return Extracted(kind=kind, text=PAGE_SEPARATOR.join(texts), pages=tuple(pages), encoding=encoding)


def _normalise(text: str) -> str:
    """Newlines, NULs and trailing spaces only: anything more would move the offsets citations point at."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return "\n".join(line.rstrip() for line in text.split("\n"))


# --- what the content is -------------------------------------------------------------------------


def _is_pdf(data: bytes) -> bool:
    return _PDF_HEADER.search(data[:_PDF_HEADER_WINDOW]) is not None


def _signature(data: bytes) -> str | None:
    return next((what for magic, what in _SIGNATURES if data.startswith(magic)), None)


def _zip_members(data: bytes) -> list[zipfile.ZipInfo] | None:
    """The archive's table of contents, or None when it cannot be read."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return None


def _zip_names(data: bytes) -> set[str] | None:
    members = _zip_members(data)
    return None if members is None else {member.filename for member in members}


def _describe(data: bytes) -> str:
    if _is_pdf(data):
        return "a PDF document"
    if data.startswith(_ZIP_MAGIC):
        return _describe_zip(_zip_names(data))
    if what := _signature(data):
        return what
    return "plain text" if sniff_kind(data) == "text" else "binary data of an unknown type"


def _describe_zip(names: set[str] | None) -> str:
    if names is None:
        return "a damaged ZIP archive"
    if _DOCX_MAIN_PART in names:
        return "a Word document (DOCX)"
    if any(name.startswith("xl/") for name in names):
        return "an Excel workbook (XLSX)"
    if any(name.startswith("ppt/") for name in names):
        return "a PowerPoint presentation (PPTX)"
    return "a ZIP archive"


def _mismatch(filename: str, data: bytes, expected: str) -> ParseError:
    found = _describe(data)
    actual = sniff_kind(data)
    if actual:
        advice = f"Rename it to {_EXTENSION_OF_KIND[actual]} and upload it again."
    else:
        advice = "Save it as a PDF, a Word document (.docx) or plain text and upload that instead."
    return ParseError(f"“{filename}” does not match its extension: it is {found}, not {_KIND_NAMES[expected]}. {advice}")


# --- PDF -----------------------------------------------------------------------------------------


def _extract_pdf(filename: str, data: bytes) -> Extracted:
    if not _is_pdf(data):
        raise _mismatch(filename, data, "pdf")
    texts = _pdf_page_texts(filename, _open_pdf(filename, data))
    if not any(text.strip() for text in texts):
        raise ParseError(
            f"“{filename}” has no text layer — OCR is not supported, so scanned pages cannot be read. "
            "Run OCR on it first (most PDF editors can) or upload a version with selectable text."
        )
    return _assemble("pdf", texts)


def _open_pdf(filename: str, data: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        # Owner-only protection (printing/copying limits) opens with the empty password, and is fine to read.
        opened = not reader.is_encrypted or reader.decrypt("") != PasswordType.NOT_DECRYPTED
    except DependencyError as exc:
        raise _unreadable_encryption(filename) from exc
    except Exception as exc:  # pypdf raises many types on malformed input, not only PdfReadError
        raise _damaged_pdf(filename) from exc
    if not opened:
        raise ParseError(
            f"“{filename}” is encrypted with a password. Remove the password (for example print it to a new PDF) "
            "and upload the unprotected copy."
        )
    return reader


def _pdf_page_texts(filename: str, reader: PdfReader) -> list[str]:
    # All pages or none: indexing part of a document would let people believe the rest was searched.
    try:
        return [_normalise(page.extract_text()) for page in reader.pages]
    except DependencyError as exc:  # AES content needs the optional `cryptography` package
        raise _unreadable_encryption(filename) from exc
    except Exception as exc:  # as above: any other failure inside pypdf means the file is broken
        raise _damaged_pdf(filename) from exc


def _unreadable_encryption(filename: str) -> ParseError:
    return ParseError(
        f"“{filename}” is encrypted with a method this server cannot open. Remove the protection "
        "(for example print it to a new PDF) and upload the unprotected copy."
    )


def _damaged_pdf(filename: str) -> ParseError:
    return ParseError(
        f"“{filename}” is damaged or truncated and cannot be read as a PDF. Check that it opens in a PDF viewer, "
        "then download or export it again and upload the new copy."
    )


# --- Word ----------------------------------------------------------------------------------------


def _extract_docx(filename: str, data: bytes, max_unzipped_bytes: int) -> Extracted:
    _check_docx_archive(filename, data, max_unzipped_bytes)
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = [_docx_block(item) for item in document.iter_inner_content()]
    except Exception as exc:  # python-docx and lxml raise KeyError, ValueError, XMLSyntaxError… on broken parts
        raise _damaged_docx(filename) from exc
    text = _normalise(PAGE_SEPARATOR.join(block for block in blocks if block))
    if not text.strip():
        raise ParseError(f"“{filename}” contains no text. If it holds only images or scans, upload a version with real text.")
    return _assemble("docx", [text])


def _check_docx_archive(filename: str, data: bytes, max_unzipped_bytes: int) -> None:
    if not data.startswith(_ZIP_MAGIC):
        raise _mismatch(filename, data, "docx")
    members = _zip_members(data)
    names = {member.filename for member in members or ()}
    # A Word file missing its main part is broken; a ZIP with no Word parts at all is something else.
    if members is None or (_DOCX_MAIN_PART not in names and any(name.startswith("word/") for name in names)):
        raise _damaged_docx(filename)
    if _DOCX_MAIN_PART not in names:
        raise _mismatch(filename, data, "docx")
    _refuse_zip_bomb(filename, members, max_unzipped_bytes)


def _refuse_zip_bomb(filename: str, members: list[zipfile.ZipInfo], max_unzipped_bytes: int) -> None:
    # The declared sizes can be trusted as a cap: zipfile stops reading a member at its declared size.
    cap = f"{max_unzipped_bytes / 2**20:.0f} MB size cap"
    total = sum(member.file_size for member in members)
    if total > max_unzipped_bytes:
        raise ParseError(
            f"“{filename}” unpacks to {total / 2**20:.0f} MB, more than the {cap} for Word documents. "
            "Split it into smaller documents (or compress its images) and upload those."
        )
    for member in members:
        if member.file_size > _RATIO_CHECK_FROM_BYTES and member.file_size > _MAX_RATIO * max(member.compress_size, 1):
            ratio = member.file_size // max(member.compress_size, 1)
            raise ParseError(
                f"“{filename}” contains a part that unpacks {ratio}× larger than it is stored, as zip bombs do, "
                f"so it is refused under the {cap}. If it is a genuine document, save it again from Word and upload the new copy."
            )


def _docx_block(item) -> str:
    if isinstance(item, Table):
        return "\n".join(_table_rows(item))
    text = item.text.strip()
    level = _heading_level(item) if text else None
    return f"{'#' * level} {text}" if level else text


def _heading_level(paragraph) -> int | None:
    name = (paragraph.style.name if paragraph.style is not None else None) or ""
    if name.lower() == "title":
        return 1
    match = re.match(r"heading\s*(\d+)", name, re.IGNORECASE)
    # Markdown stops at six levels; Word's Heading 7–9 are rare and read fine as level 6.
    return min(int(match[1]), 6) if match else None


def _table_rows(table: Table, cell_separator: str = " | ") -> list[str]:
    rows = []
    for row in table.rows:
        texts = [""] * row.grid_cols_before + [_cell_text(cell) for cell in _distinct(row.cells)]
        while texts and not texts[-1]:
            texts.pop()
        if texts:
            rows.append(cell_separator.join(texts))
    return rows


def _distinct(cells: tuple) -> list:
    # python-docx repeats a horizontally merged cell once per grid column it spans.
    return [cell for i, cell in enumerate(cells) if i == 0 or cell is not cells[i - 1]]


def _cell_text(cell) -> str:
    # A cell may hold several paragraphs and nested tables; flatten them so that a row stays one line,
    # with the nested table's own separators so its cells are not mistaken for the outer row's.
    parts = ["; ".join(_table_rows(item, ", ")) if isinstance(item, Table) else item.text for item in cell.iter_inner_content()]
    return " ".join(" ".join(parts).split())


def _damaged_docx(filename: str) -> ParseError:
    return ParseError(
        f"“{filename}” is damaged and cannot be read as a Word document. Open it in Word or LibreOffice, "
        "save it again as .docx and upload the new copy."
    )


# --- text and Markdown ---------------------------------------------------------------------------


def _extract_text_file(filename: str, data: bytes) -> Extracted:
    if _is_pdf(data) or data.startswith(_ZIP_MAGIC) or _signature(data):
        raise _mismatch(filename, data, "text")
    text, encoding = _decode(filename, data)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ParseError(f"“{filename}” contains no text, only blank space. Check that you picked the right file and upload it again.")
    return _assemble("text", [text], encoding)


def _decode(filename: str, data: bytes) -> tuple[str, str]:
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
