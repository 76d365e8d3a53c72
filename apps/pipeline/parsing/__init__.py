"""Text extraction from uploaded files: PDF (scanned pages read by OCR), Word (DOCX), web pages
(HTML), spreadsheets (XLSX, CSV), slides (PPTX), plain text and Markdown.

The kind of a file is read from its content, and a file whose content does not match its
extension is refused, so a mislabelled upload fails with a message a person can act on instead of
being indexed as garbage. Every ParseError names the file and says what to do. Each kind has its
module; this one says which reads what.
"""

from __future__ import annotations

from pathlib import PurePath

from apps.pipeline.parsing.base import PAGE_SEPARATOR, Extracted, Location, Page, ParseError, describe_span
from apps.pipeline.parsing.kinds import sniff_kind
from apps.pipeline.parsing.markup import extract_html
from apps.pipeline.parsing.ocr import OcrOptions, Progress, installed_languages
from apps.pipeline.parsing.pdf import extract_pdf
from apps.pipeline.parsing.plain import extract_text_file
from apps.pipeline.parsing.sheets import MAX_CELLS, extract_csv, extract_xlsx
from apps.pipeline.parsing.slides import extract_pptx
from apps.pipeline.parsing.word import extract_docx

__all__ = [
    "PAGE_SEPARATOR",
    "SUPPORTED_EXTENSIONS",
    "Extracted",
    "Location",
    "OcrOptions",
    "Page",
    "ParseError",
    "check_supported",
    "describe_span",
    "extract",
    "installed_languages",
    "sniff_kind",
]

_KIND_OF_EXTENSION = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".xlsx": "xlsx",
    ".csv": "csv",
    ".pptx": "pptx",
    ".txt": "text",
    ".md": "text",
    ".markdown": "text",
}
SUPPORTED_EXTENSIONS = tuple(_KIND_OF_EXTENSION)


def check_supported(filename: str) -> None:
    if PurePath(filename).suffix.lower() not in SUPPORTED_EXTENSIONS:
        raise ParseError(
            f"“{filename}” is not a supported type: upload a PDF (.pdf), a Word document (.docx), a web page (.html, .htm), "
            "a spreadsheet (.xlsx, .csv), a PowerPoint deck (.pptx) or a text or Markdown file (.txt, .md, .markdown)."
        )


def extract(
    filename: str,
    data: bytes,
    *,
    max_unzipped_bytes: int = 200 * 1024 * 1024,
    max_sheet_cells: int = MAX_CELLS,
    ocr: OcrOptions | None = None,
    on_ocr_page: Progress | None = None,
    parser_processes: int = 0,
) -> Extracted:
    """The text of a file, by the kind its extension names (its content must agree). `ocr` None
    leaves PDF pages without a text layer unread (and the PDF refused); `on_ocr_page` hears
    (pages read, pages to read) as OCR goes; `parser_processes` read a PDF's text layer outside
    this process (parsing.offload), 0 in it; a spreadsheet of more than `max_sheet_cells` cells
    is refused."""
    check_supported(filename)
    if not data:
        raise ParseError(f"“{filename}” is empty (0 bytes). Check that you picked the right file and upload it again.")
    kind = _KIND_OF_EXTENSION[PurePath(filename).suffix.lower()]
    if kind == "pdf":
        return extract_pdf(filename, data, ocr, on_ocr_page, parser_processes)
    if kind == "xlsx":
        return extract_xlsx(filename, data, max_unzipped_bytes, max_sheet_cells)
    if kind == "csv":
        return extract_csv(filename, data, max_sheet_cells)
    if kind in ("docx", "pptx"):
        return {"docx": extract_docx, "pptx": extract_pptx}[kind](filename, data, max_unzipped_bytes)
    return {"html": extract_html, "text": extract_text_file}[kind](filename, data)
