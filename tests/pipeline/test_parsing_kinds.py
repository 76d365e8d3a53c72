"""The kinds beside PDF text and Word: scanned PDF pages read by OCR, web pages, spreadsheets and
slides — real files of each (tests/fixtures/documents, see its SOURCES.md) and the messages for
the files that cannot be read. Plain Python, no database; OCR runs the real Tesseract."""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

import openpyxl
import pptx
import pytest
from pptx.util import Inches

from apps.pipeline.parsing import Location, OcrOptions, ParseError, describe_span, extract, ocr, sheets, sniff_kind
from tests.pipeline.test_parsing import _bytes, _refusal, _rezip
from tests.scans import original_text, recovered_share, scanned_pdf, with_text_page_first

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
SCANNED = "pdf/amt_handbook_sample.pdf"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _workbook(rows_by_sheet: dict[str, list[list]]) -> bytes:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in rows_by_sheet.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _deck() -> bytes:
    """Two slides: a title and body with notes; a title, a table and a group of two text boxes."""
    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Harbour safety"
    first.placeholders[1].text = "The beacon glows green every night."
    first.notes_slide.notes_text_frame.text = "Mention the three flashes."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Tides"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, column), text in {(0, 0): "Day", (0, 1): "High tide", (1, 0): "Monday", (1, 1): "06:40"}.items():
        table.cell(row, column).text = text
    group = second.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(4), Inches(2), Inches(1)).text_frame.text = "Grouped first"
    group.shapes.add_textbox(Inches(3), Inches(4), Inches(2), Inches(1)).text_frame.text = "Grouped second"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def _encrypted_office() -> bytes:
    """What Office writes for a password-protected DOCX/XLSX/PPTX: a compound file (OLE) holding
    an EncryptionInfo and an EncryptedPackage stream, not a ZIP (the streams' names, UTF-16)."""
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)
    names = "EncryptionInfo".encode("utf-16-le") + bytes(50) + "EncryptedPackage".encode("utf-16-le")
    return header + names + bytes(4096)


# --- OCR -----------------------------------------------------------------------------------------


def test_a_scanned_page_is_read_by_ocr_with_at_least_95_percent_of_its_words():
    pages_read = []
    extracted = extract(
        "scan.pdf", scanned_pdf(SCANNED), ocr=OcrOptions(), on_ocr_page=lambda done, total: pages_read.append((done, total))
    )
    share = recovered_share(original_text(SCANNED), extracted.text)
    assert share >= 0.95, f"OCR recovered {share:.1%} of the page's words"
    assert "it has two sections and is essentially" in extracted.text
    assert extracted.pages[0].location == Location("page", 1, ocr=True)
    assert extracted.ocr_page_count == 1
    assert pages_read == [(0, 1), (1, 1)], "progress counts the scanned pages"


def test_only_the_pages_without_a_text_layer_are_read_by_ocr():
    mixed = with_text_page_first(scanned_pdf(SCANNED), "pdf/scotus-transcript-p1.pdf")
    totals = set()
    extracted = extract("mixed.pdf", mixed, ocr=OcrOptions(), on_ocr_page=lambda done, total: totals.add(total))
    assert [page.location.ocr for page in extracted.pages] == [False, True]
    assert totals == {1}
    first = extracted.text[extracted.pages[0].start : extracted.pages[0].end]
    assert first == extract("text.pdf", _bytes("pdf/scotus-transcript-p1.pdf")).text


def test_with_ocr_off_a_pdf_with_some_text_keeps_its_scanned_pages_empty():
    extracted = extract("mixed.pdf", with_text_page_first(scanned_pdf(SCANNED, dpi=50), "pdf/scotus-transcript-p1.pdf"))
    assert extracted.page_count == 2
    assert extracted.pages[1].start == extracted.pages[1].end, "the scanned page has no text without OCR"
    assert extracted.ocr_page_count == 0


def test_a_scan_with_more_pages_than_the_limit_is_refused_before_any_ocr():
    scan = scanned_pdf(SCANNED, pages=(1, 1, 1), dpi=100)
    started = time.monotonic()
    message = _refusal("long.pdf", scan, ocr=OcrOptions(max_pages=2))
    assert "has 3 scanned pages (no text layer), more than the 2 pages this server reads by OCR in one document" in message
    assert time.monotonic() - started < 2


def test_ocr_past_the_time_limit_stops_with_a_message():
    message = _refusal("slow.pdf", scanned_pdf(SCANNED, pages=(1, 1), dpi=100), ocr=OcrOptions(time_limit_s=0.05))
    assert "stopped after 0 of 2 scanned pages at the 0.05-second limit for one document" in message


def test_a_server_without_tesseract_says_so_and_how_to_install_it(monkeypatch):
    monkeypatch.setattr(ocr, "TESSERACT", "/nonexistent/tesseract")
    message = _refusal("scan.pdf", scanned_pdf(SCANNED, dpi=50), ocr=OcrOptions())
    assert "has scanned pages that need OCR, but OCR is not installed on this server" in message
    assert "scripts/install-ocr.sh" in message


def test_an_ocr_language_the_server_lacks_is_named_in_the_message():
    message = _refusal("scan.pdf", scanned_pdf(SCANNED, dpi=100), ocr=OcrOptions(language="zzz"))
    assert "needs OCR in “zzz”, a language this server's Tesseract does not have" in message


# --- web pages -----------------------------------------------------------------------------------

PAGE = b"""<!DOCTYPE html><html><head><title>Harbour</title><style>p { color: red }</style>
<script>var secret = "do not index";</script></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<main><h1>The   harbour
beacon</h1><p>It glows green
every night.<br>Ships count three flashes.</p>
<table><thead><tr><th>Day</th><th>High tide</th></tr></thead>
<tbody><tr><td>Monday<td>06:40<tr><td>Tuesday</td><td>07:25 <table><tr><td>a</td><td>b</td></tr></table></td></tr></tbody></table>
<noscript>Turn on JavaScript</noscript></main><footer>Footer links</footer></body></html>"""


def test_a_web_page_keeps_its_main_text_with_headings_and_table_rows():
    text = extract("harbour.html", PAGE).text
    assert text.split("\n\n") == [
        "# The harbour beacon",
        "It glows green every night.\nShips count three flashes.",
        "Day | High tide\nDay: Monday; High tide: 06:40\nDay: Tuesday; High tide: 07:25 a, b",
    ]


def test_a_web_page_without_main_keeps_its_body_but_not_its_scripts_styles_or_menus():
    text = extract("page.htm", PAGE.replace(b"<main>", b"<div>").replace(b"</main>", b"</div>")).text
    assert "Footer links" in text
    for hidden in ("do not index", "color", "Home", "JavaScript"):
        assert hidden not in text


def test_a_real_web_page_reads_as_headings_and_paragraphs():
    extracted = extract("users-and-groups.html", fixture("users-and-groups.html"))
    lines = extracted.text.split("\n")
    assert extracted.kind == "html"
    assert "# Users and Groups in the Debian System" in lines
    assert "# Chapter 2. Users and Groups" in lines
    assert "Root is (typically) the superuser." in lines
    assert "Please send mail to <base-passwd@packages.debian.org>" in extracted.text  # text that only looks like markup stays
    assert "CLASS=" not in extracted.text


def test_a_page_in_a_declared_legacy_charset_is_decoded_by_its_declaration():
    page = '<html><head><meta charset="windows-1252"></head><body><p>Café “crème”</p></body></html>'.encode("cp1252")
    assert extract("menu.html", page).text == "Café “crème”"


def test_a_web_page_of_only_scripts_is_refused_as_having_no_text():
    message = _refusal("app.html", b"<html><head><script>render()</script></head><body><div id=app></div></body></html>")
    assert "contains no text a reader would see" in message


def test_html_is_recognised_by_its_content():
    assert sniff_kind(PAGE) == "html"
    assert sniff_kind(b"<!-- saved -->\n<html><body>x</body></html>") == "html"
    assert sniff_kind(b"Notes about <html> tags") == "text"


# --- spreadsheets --------------------------------------------------------------------------------


def test_a_real_workbook_reads_one_unit_per_row_with_its_header():
    extracted = extract("founders.xlsx", fixture("founders.xlsx"))
    assert extracted.kind == "xlsx"
    assert extracted.text.split("\n\n") == [
        "first_name: John; last_name: Adams; gpa: 90",
        "first_name: George; last_name: Washington; gpa: 67",
        "first_name: Thomas; last_name: Jefferson; gpa: 50",
    ]
    assert [page.location for page in extracted.pages] == [Location("row", n, sheet="Feuille1") for n in (2, 3, 4)]


def test_a_workbook_whose_dimensions_lie_reads_only_its_real_rows_and_quickly():
    started = time.monotonic()
    extracted = extract("bad_dimensions.xlsx", fixture("bad_dimensions.xlsx"))
    assert time.monotonic() - started < 5
    assert extracted.text.split("\n\n")[0] == "PN: EP00001; Qty: 10000; Price: 0.0367"
    assert extracted.page_count < 10


def test_every_sheet_is_read_with_its_name_and_rows_keep_their_numbers():
    data = _workbook({"Ships": [["Name", "Flag"], ["Aurora", "NO"], [None, None], ["Baltic", "FI"]], "Notes": [["only a title"]]})
    extracted = extract("fleet.xlsx", data)
    assert extracted.text.split("\n\n") == ["Name: Aurora; Flag: NO", "Name: Baltic; Flag: FI", "only a title"]
    assert [page.location for page in extracted.pages] == [
        Location("row", 2, sheet="Ships"),
        Location("row", 4, sheet="Ships"),
        Location("row", 1, sheet="Notes"),
    ]


def test_a_real_csv_with_a_title_line_takes_the_fuller_row_as_its_header():
    extracted = extract("stanley-cups.csv", fixture("stanley-cups.csv"))
    assert extracted.kind == "csv"
    assert extracted.text.split("\n\n") == [
        "Stanley Cups",
        "Team: Blues; Location: STL; Stanley Cups: 1",
        "Team: Flyers; Location: PHI; Stanley Cups: 2",
        "Team: Maple Leafs; Location: TOR; Stanley Cups: 13",
    ]
    assert [page.location.number for page in extracted.pages] == [1, 3, 4, 5]


def test_a_semicolon_csv_with_an_unnamed_column_is_read():
    text = extract("tides.csv", b"Day;;Height\nMonday;early;1,2\n").text
    assert text == "Day: Monday; column 2: early; Height: 1,2"


def test_a_spreadsheet_over_the_cell_cap_is_refused_naming_the_setting():
    data = _workbook({"Big": [[f"r{row}c{column}" for column in range(10)] for row in range(10)]})
    assert "has more than 50 cells, the most this workspace reads" in _refusal("big.xlsx", data, max_sheet_cells=50)
    message = _refusal("big.csv", "\n".join(",".join("x" * 10) for _ in range(10)).encode(), max_sheet_cells=50)
    assert "has more than 50 cells" in message
    assert "Spreadsheet cells per document at most" in message
    assert extract("big.csv", b"a,b\n1,2\n", max_sheet_cells=4).text == "a: 1; b: 2", "at the cap is read"


def test_a_csv_of_a_million_columns_is_refused_in_seconds_at_the_default_cap():
    import time

    data = ("h," * 1_000_000 + "h\n" + "1," * 1_000_000 + "1\n").encode()
    started = time.monotonic()
    message = _refusal("wide.csv", data)
    assert f"more than {sheets.MAX_CELLS:,} cells" in message
    assert time.monotonic() - started < 10


def test_a_workbook_zip_bomb_is_refused_before_it_is_unpacked():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("xl/workbook.xml", bytes(3 * 2**20))
    message = _refusal("dense.xlsx", buffer.getvalue(), max_unzipped_bytes=2**20)
    assert "more than the 1 MB size cap for Excel workbooks" in message


def test_broken_spreadsheets_are_refused_with_what_to_do():
    data = fixture("founders.xlsx")
    assert "is damaged and cannot be read as an Excel file" in _refusal("cut.xlsx", _rezip(data, {"xl/workbook.xml": b"<workbook"}))
    assert "is damaged" in _refusal("half.xlsx", data[: len(data) // 2])
    assert "protected with a password" in _refusal("locked.xlsx", _encrypted_office())
    assert "contains no rows with any value" in _refusal("empty.xlsx", _workbook({"Empty": []}))
    assert "it is a Word document (DOCX), not an Excel workbook (XLSX). Rename it to .docx" in _refusal(
        "letter.xlsx", _bytes("docx/lorem_ipsum.docx")
    )
    assert "contains no rows with any value" in _refusal("blank.csv", b",,\n , \n")
    assert "it is a PDF document, not a CSV file. Rename it to .pdf" in _refusal("data.csv", scanned_pdf(SCANNED, dpi=50))


# --- slides --------------------------------------------------------------------------------------


def test_a_real_deck_reads_one_unit_per_slide():
    extracted = extract("txt-fit-text.pptx", fixture("txt-fit-text.pptx"))
    assert extracted.kind == "pptx"
    assert extracted.text.startswith("The art and craft of designing typefaces is called type design.")
    assert extracted.pages[0].location == Location("slide", 1)


def test_each_slide_has_its_title_text_tables_groups_and_notes():
    extracted = extract("harbour.pptx", _deck())
    assert extracted.text.split("\n\n") == [
        "# Harbour safety\nThe beacon glows green every night.\nNotes: Mention the three flashes.",
        "# Tides\nDay | High tide\nMonday | 06:40\nGrouped first\nGrouped second",
    ]
    assert [page.location for page in extracted.pages] == [Location("slide", 1), Location("slide", 2)]


def test_broken_decks_are_refused_with_what_to_do():
    data = _deck()
    assert "is damaged and cannot be read as a PowerPoint file" in _refusal("cut.pptx", _rezip(data, {"ppt/presentation.xml": None}))
    assert "protected with a password" in _refusal("locked.pptx", _encrypted_office())
    assert "contains no text: it has no slides" in _refusal("empty.pptx", _empty_deck())
    assert "it is a ZIP archive, not a PowerPoint presentation (PPTX)" in _refusal("files.pptx", _zip_of("notes.txt"))


def _empty_deck() -> bytes:
    buffer = io.BytesIO()
    pptx.Presentation().save(buffer)
    return buffer.getvalue()


def _zip_of(name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, "hello")
    return buffer.getvalue()


# --- how citations name a location ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "last", "shown"),
    [
        (Location("page", 3), Location("page", 3), "p. 3"),
        (Location("page", 3, ocr=True), Location("page", 3, ocr=True), "p. 3, OCR"),
        (Location("page", 3), Location("page", 4, ocr=True), "pp. 3–4, OCR"),
        (Location("row", 5, sheet="Sales"), Location("row", 5, sheet="Sales"), "Sales, row 5"),
        (Location("row", 5, sheet="Sales"), Location("row", 9, sheet="Sales"), "Sales, rows 5–9"),
        (Location("row", 9, sheet="Sales"), Location("row", 2, sheet="Costs"), "Sales, row 9 – Costs, row 2"),
        (Location("row", 2), Location("row", 4), "rows 2–4"),
        (Location("slide", 2), Location("slide", 2), "slide 2"),
        (Location("slide", 2), Location("slide", 3), "slides 2–3"),
    ],
)
def test_a_passage_is_cited_by_its_page_row_or_slide(first, last, shown):
    assert describe_span(first, last) == shown
    assert Location.from_dict(first.as_dict()) == first


def test_ocr_is_refused_with_a_message_when_it_is_off():
    with pytest.raises(ParseError, match="OCR is turned off here"):
        extract("scan.pdf", scanned_pdf(SCANNED, dpi=50))
