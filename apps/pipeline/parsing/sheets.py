"""Spreadsheets (XLSX, CSV): one unit per row, read with its sheet's header row
("Team: Blues; Location: STL; Stanley Cups: 1") so that a passage names what each value is, and
located by its sheet and its row number as the spreadsheet shows it."""

from __future__ import annotations

import csv
import datetime
import io
from collections.abc import Iterable, Sequence

import openpyxl
from openpyxl.utils import get_column_letter

from apps.pipeline.parsing.base import Extracted, Location, ParseError, assemble, one_line
from apps.pipeline.parsing.plain import decode_text
from apps.pipeline.parsing.word import check_office_archive, damaged_office

# Cells visited (empty ones too) in one file, unless the caller says otherwise (a workspace's
# "max_sheet_cells"): past it, a sheet is more than a reader can use, and more than ingestion
# should spend its time and memory on.
MAX_CELLS = 500_000
# A title line above the table ("Stanley Cups,,") stops short of the header row below it.
_HEADER_SEARCH_ROWS = 5
_CSV_DELIMITERS = ",;\t|"

Row = tuple[int, list[str]]  # (row number in its sheet, its cells as text)


def extract_xlsx(filename: str, data: bytes, max_unzipped_bytes: int, max_cells: int = MAX_CELLS) -> Extracted:
    check_office_archive(filename, data, "xlsx", max_unzipped_bytes)
    counter = _CellCounter(filename, max_cells)
    texts, locations = [], []
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        for sheet in workbook.worksheets:
            sheet.reset_dimensions()  # read the rows the sheet holds, not the range its header claims
            rows = _numbered(counter.count(row) for row in sheet.iter_rows(values_only=True))
            _add_units(texts, locations, rows, sheet.title, get_column_letter)
        workbook.close()
    except ParseError:
        raise
    except Exception as exc:  # openpyxl and lxml raise KeyError, ValueError, XMLSyntaxError… on broken parts
        raise damaged_office(filename, "xlsx") from exc
    return _finish(filename, "xlsx", texts, locations)


def extract_csv(filename: str, data: bytes, max_cells: int = MAX_CELLS) -> Extracted:
    text, encoding = decode_text(filename, data, "csv")
    counter = _CellCounter(filename, max_cells)
    texts, locations = [], []
    try:
        rows = _numbered(counter.count(row) for row in csv.reader(io.StringIO(text, newline=""), _dialect(text)))
        _add_units(texts, locations, rows, "", lambda column: f"column {column}")
    except csv.Error as exc:
        raise ParseError(
            f"“{filename}” cannot be read as CSV ({exc}). Open it in a spreadsheet, save it again as CSV (UTF-8) and upload the new copy."
        ) from None
    return _finish(filename, "csv", texts, locations, encoding)


class _CellCounter:
    def __init__(self, filename: str, limit: int):
        self.filename, self.limit, self.seen = filename, limit, 0

    def count(self, row: Sequence) -> list[str]:
        self.seen += len(row)  # counted before the cells are read: a row of a million is refused at once
        if self.seen > self.limit:
            raise ParseError(
                f"“{self.filename}” has more than {self.limit:,} cells, the most this workspace reads from one spreadsheet "
                "(the setting “Spreadsheet cells per document at most”). Split it into smaller files, or delete its empty "
                "rows and columns, and upload those; or ask an admin to raise the limit."
            )
        return [_cell_text(value) for value in row]


def _numbered(rows: Iterable[list[str]]) -> list[Row]:
    """The rows that hold something, with their numbers as the spreadsheet shows them (from 1)."""
    return [(number, cells) for number, cells in enumerate(rows, start=1) if any(cells)]


def _add_units(texts: list[str], locations: list[Location], rows: list[Row], sheet: str, column_name) -> None:
    if not rows:
        return
    header_at = _header_index(rows)
    header = rows[header_at][1]
    names = [name or column_name(i) for i, name in enumerate(header, start=1)]
    for index, (number, cells) in enumerate(rows):
        if index == header_at and len(rows) > header_at + 1:
            continue  # the header is read with every row below it
        plain = index <= header_at
        texts.append(" | ".join(cell for cell in cells if cell) if plain else _with_header(names, cells, column_name))
        locations.append(Location("row", number, sheet=sheet))


def _header_index(rows: list[Row]) -> int:
    """The first of the top rows that reaches as far right as the widest of them (a header may
    leave a column unnamed; a title line above it stops short)."""
    first = rows[:_HEADER_SEARCH_ROWS]
    widest = max(_reach(cells) for _, cells in first)
    return next(i for i, (_, cells) in enumerate(first) if _reach(cells) == widest)


def _reach(cells: list[str]) -> int:
    return max((i + 1 for i, cell in enumerate(cells) if cell), default=0)


def _with_header(names: list[str], cells: list[str], column_name) -> str:
    named = [(names[i] if i < len(names) else column_name(i + 1), cell) for i, cell in enumerate(cells)]
    return "; ".join(f"{name}: {cell}" for name, cell in named if cell)


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return f"{value:.15g}"
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return one_line(value)


def _dialect(text: str):
    try:
        return csv.Sniffer().sniff(text[:65536], delimiters=_CSV_DELIMITERS)
    except csv.Error:  # one column, or too little to tell: the comma
        return csv.excel


def _finish(filename: str, kind: str, texts: list[str], locations: list[Location], encoding: str | None = None) -> Extracted:
    if not texts:
        raise ParseError(f"“{filename}” contains no rows with any value. Check that you picked the right file and upload it again.")
    return assemble(kind, texts, encoding, locations)
