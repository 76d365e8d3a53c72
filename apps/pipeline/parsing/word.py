"""Word (DOCX): paragraphs in document order, headings as Markdown heading lines, tables as rows."""

from __future__ import annotations

import io
import re

import docx
from docx.table import Table

from apps.pipeline.parsing.base import PAGE_SEPARATOR, ZIP_MAGIC, Extracted, ParseError, assemble, normalise, refuse_zip_bomb, zip_members
from apps.pipeline.parsing.kinds import OFFICE_PARTS, encrypted_office, is_encrypted_office, mismatch


def extract_docx(filename: str, data: bytes, max_unzipped_bytes: int) -> Extracted:
    check_office_archive(filename, data, "docx", max_unzipped_bytes)
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = [_docx_block(item) for item in document.iter_inner_content()]
    except Exception as exc:  # python-docx and lxml raise KeyError, ValueError, XMLSyntaxError… on broken parts
        raise _damaged_docx(filename) from exc
    text = normalise(PAGE_SEPARATOR.join(block for block in blocks if block))
    if not text.strip():
        raise ParseError(f"“{filename}” contains no text. If it holds only images or scans, upload a version with real text.")
    return assemble("docx", [text])


OFFICE_WHAT = {"docx": "Word documents", "xlsx": "Excel workbooks", "pptx": "PowerPoint presentations"}
OFFICE_APP = {"docx": "Word", "xlsx": "Excel", "pptx": "PowerPoint"}


def check_office_archive(filename: str, data: bytes, kind: str, max_unzipped_bytes: int) -> None:
    """A DOCX, XLSX or PPTX is a ZIP holding the kind's main part: refuse anything else, a damaged
    one, a password-protected one and a zip bomb before any XML of it is parsed."""
    if is_encrypted_office(data):
        raise encrypted_office(filename, kind)
    if not data.startswith(ZIP_MAGIC):
        raise mismatch(filename, data, kind)
    main, folder = OFFICE_PARTS[kind]
    members = zip_members(data)
    names = {member.filename for member in members or ()}
    # A file missing its main part is broken; a ZIP with none of the kind's parts at all is something else.
    if members is None or (main not in names and any(name.startswith(folder) for name in names)):
        raise damaged_office(filename, kind)
    if main not in names:
        raise mismatch(filename, data, kind)
    refuse_zip_bomb(filename, members, max_unzipped_bytes, OFFICE_WHAT[kind])


def damaged_office(filename: str, kind: str) -> ParseError:
    if kind == "docx":
        return _damaged_docx(filename)
    app, extension = OFFICE_APP[kind], f".{kind}"
    return ParseError(
        f"“{filename}” is damaged and cannot be read as {'an' if kind == 'xlsx' else 'a'} {app} file. Open it in {app} or LibreOffice, "
        f"save it again as {extension} and upload the new copy."
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
