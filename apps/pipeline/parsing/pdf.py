"""PDF: pypdf reads each page's text layer; the pages without one are read by OCR (parsing.ocr)."""

from __future__ import annotations

import io

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError

from apps.pipeline.parsing import ocr, offload
from apps.pipeline.parsing.base import Extracted, Location, ParseError, assemble, normalise
from apps.pipeline.parsing.furniture import strip_running_lines
from apps.pipeline.parsing.kinds import is_pdf, mismatch


def extract_pdf(filename: str, data: bytes, options: ocr.OcrOptions | None, on_page: ocr.Progress | None, processes: int = 0) -> Extracted:
    """The text of every page; `processes` parser processes read the text layer (parsing.offload;
    0 reads it in this process)."""
    if not is_pdf(data):
        raise mismatch(filename, data, "pdf")
    texts = offload.run(processes, text_layer, filename, data)
    missing = [number for number, text in enumerate(texts, start=1) if not text.strip()]
    if options is None and len(missing) == len(texts):
        raise _no_text_layer(filename, len(missing), len(texts))
    # With OCR off, the pages without text stay empty (a blank page between chapters, say).
    read = ocr.read_pages(filename, data, missing, options, on_page) if missing and options is not None else {}
    texts = [normalise(read[number]) if number in read else text for number, text in enumerate(texts, start=1)]
    texts = strip_running_lines(texts)
    if not any(text.strip() for text in texts):
        raise ParseError(
            f"“{filename}” has no text layer and OCR found no text on its {len(texts)} page(s): they look blank. "
            "Check that the scan is legible (and the workspace's OCR language right), then upload it again."
        )
    locations = [Location("page", number, ocr=number in read) for number in range(1, len(texts) + 1)]
    return assemble("pdf", texts, locations=locations)


def text_layer(filename: str, data: bytes) -> list[str]:
    """Each page's text as its text layer gives it ("" for a page without one)."""
    return _page_texts(filename, _open(filename, data))


def _open(filename: str, data: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        # Owner-only protection (printing/copying limits) opens with the empty password, and is fine to read.
        opened = not reader.is_encrypted or reader.decrypt("") != PasswordType.NOT_DECRYPTED
    except DependencyError as exc:
        raise _unreadable_encryption(filename) from exc
    except Exception as exc:  # pypdf raises many types on malformed input, not only PdfReadError
        raise damaged_pdf(filename) from exc
    if not opened:
        raise ParseError(
            f"“{filename}” is encrypted with a password. Remove the password (for example print it to a new PDF) "
            "and upload the unprotected copy."
        )
    return reader


def _page_texts(filename: str, reader: PdfReader) -> list[str]:
    # All pages or none: indexing part of a document would let people believe the rest was searched.
    try:
        return [normalise(page.extract_text()) for page in reader.pages]
    except DependencyError as exc:  # AES content needs the optional `cryptography` package
        raise _unreadable_encryption(filename) from exc
    except Exception as exc:  # as above: any other failure inside pypdf means the file is broken
        raise damaged_pdf(filename) from exc


def _no_text_layer(filename: str, missing: int, total: int) -> ParseError:
    return ParseError(
        f"“{filename}” has {missing} of {total} page(s) without a text layer, and OCR is turned off here, "
        "so scanned pages cannot be read. Run OCR on it first (most PDF editors can) or upload a version with selectable text."
    )


def _unreadable_encryption(filename: str) -> ParseError:
    return ParseError(
        f"“{filename}” is encrypted with a method this server cannot open. Remove the protection "
        "(for example print it to a new PDF) and upload the unprotected copy."
    )


def damaged_pdf(filename: str) -> ParseError:
    return ParseError(
        f"“{filename}” is damaged or truncated and cannot be read as a PDF. Check that it opens in a PDF viewer, "
        "then download or export it again and upload the new copy."
    )
