"""Text extraction from real PDFs and Word files, and the messages people see for files that cannot be read.

Plain Python: no database. The real documents live in shared/data/docs beside the repository.
"""

from __future__ import annotations

import functools
import io
import json
import random
import re
import zipfile
from pathlib import Path

import docx
import pytest
from pypdf import PdfReader, PdfWriter

from apps.pipeline.parsing import SUPPORTED_EXTENSIONS, Extracted, OcrOptions, Page, ParseError, check_supported, extract, sniff_kind
from apps.pipeline.parsing.furniture import strip_running_lines


def _docs_dir() -> Path:
    # In CI the repository is cloned under another name with a copy of shared/ beside it.
    beside = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "docs"
    return beside if beside.exists() else Path("/work/shared/data/docs")


DOCS = _docs_dir()
MANIFEST = json.loads((DOCS / "MANIFEST.json").read_text())
PDFS = [entry for entry in MANIFEST if entry["file"].endswith(".pdf")]
DOCXS = [entry for entry in MANIFEST if entry["file"].endswith(".docx")]


def _ids(entries: list[dict]) -> list[str]:
    return [Path(entry["file"]).name for entry in entries]


@functools.cache
def _bytes(relative: str) -> bytes:
    return (DOCS / relative).read_bytes()


@functools.cache
def _extracted(relative: str) -> Extracted:
    return extract(Path(relative).name, _bytes(relative))


@functools.cache
def _pypdf_pages(relative: str) -> tuple[str, ...]:
    reader = PdfReader(io.BytesIO(_bytes(relative)), strict=False)
    return tuple(page.extract_text() for page in reader.pages)


def _normalised(raw: str) -> str:
    """The light clean-up the contract promises: newlines, NULs, trailing spaces on lines."""
    lines = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").split("\n")
    return "\n".join(line.rstrip() for line in lines)


def _refusal(filename: str, data: bytes, **kwargs) -> str:
    with pytest.raises(ParseError) as caught:
        extract(filename, data, **kwargs)
    message = str(caught.value)
    assert f"“{filename}”" in message  # every message names the file
    return message


def _pdf_bytes(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _rezip(data: bytes, changes: dict[str, bytes | None]) -> bytes:
    """A copy of a ZIP with members replaced (bytes) or dropped (None)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = changes.get(info.filename, source.read(info))
            if content is not None:
                target.writestr(info.filename, content)
    return buffer.getvalue()


def _zip_of_zeros(megabytes: int, *, compresslevel: int) -> bytes:
    # Written in 1 MB pieces so the test never holds the unpacked size in memory.
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel) as archive,
        archive.open("word/document.xml", "w", force_zip64=True) as member,
    ):
        for _ in range(megabytes):
            member.write(bytes(1 << 20))
    return buffer.getvalue()


# --- real PDFs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", PDFS, ids=_ids(PDFS))
def test_every_real_pdf_keeps_its_page_count_and_some_text(entry):
    extracted = _extracted(entry["file"])
    assert extracted.kind == "pdf"
    assert extracted.page_count == entry["pages"]
    assert [page.number for page in extracted.pages] == list(range(1, entry["pages"] + 1))
    assert extracted.text.strip()
    assert extracted.encoding is None


@pytest.mark.parametrize("entry", PDFS, ids=_ids(PDFS))
def test_each_pdf_page_span_holds_exactly_that_pages_text(entry):
    extracted = _extracted(entry["file"])
    spans = [extracted.text[page.start : page.end] for page in extracted.pages]
    assert spans == strip_running_lines([_normalised(raw) for raw in _pypdf_pages(entry["file"])])
    assert extracted.text == "\n\n".join(spans)


@pytest.mark.parametrize("entry", PDFS, ids=_ids(PDFS))
def test_page_of_finds_the_page_of_any_character(entry):
    extracted = _extracted(entry["file"])
    for page in extracted.pages:
        assert extracted.page_of(page.start) == page.number
        assert extracted.page_of(max(page.start, page.end - 1)) == page.number
        assert extracted.page_of((page.start + page.end) // 2) == page.number
        if page.number < extracted.page_count:  # the blank line between pages belongs to the page before
            assert extracted.page_of(page.end) == page.number
    assert extracted.page_of(len(extracted.text)) == extracted.page_count
    with pytest.raises(ValueError, match="outside the text"):
        extracted.page_of(len(extracted.text) + 1)


def test_the_scanned_book_reads_its_ocr_layer_page_by_page():
    extracted = _extracted("pdf/Seige_of_Vicksburg_Sample_OCR.pdf")
    first = extracted.text[extracted.pages[0].start : extracted.pages[0].end]
    assert "SIEGE" in first
    assert "VICKSBURG" in first
    assert all(extracted.text[page.start : page.end].strip() for page in extracted.pages)


def test_real_files_are_recognised_by_their_content():
    assert {sniff_kind(_bytes(entry["file"])) for entry in PDFS} == {"pdf"}
    assert {sniff_kind(_bytes(entry["file"])) for entry in DOCXS} == {"docx"}


# --- real Word documents -------------------------------------------------------------------------


@pytest.mark.parametrize("entry", DOCXS, ids=_ids(DOCXS))
def test_every_real_word_document_is_one_page_of_text(entry):
    extracted = _extracted(entry["file"])
    assert extracted.kind == "docx"
    assert extracted.pages == (Page(number=1, start=0, end=len(extracted.text)),)
    assert extracted.text.strip()
    assert "\n\n\n" not in extracted.text  # empty paragraphs are skipped


@pytest.mark.parametrize("entry", [entry for entry in DOCXS if entry["tables"]], ids=_ids([e for e in DOCXS if e["tables"]]))
def test_word_tables_become_rows_of_cells_joined_by_bars(entry):
    assert " | " in _extracted(entry["file"]).text


def test_word_headings_and_title_become_markdown_heading_lines():
    lines = _extracted("docx/word_sample.docx").text.split("\n")
    assert "# Swimming in the lake" in lines  # the Title style
    assert "# Let’s swim!" in lines
    assert "## Let’s eat" in lines
    assert "# Test with tables" in _extracted("docx/word_tables.docx").text.split("\n")


def test_a_word_document_without_heading_styles_gets_no_heading_lines():
    text = _extracted("docx/handbook-1p.docx").text
    assert not any(line.startswith("#") for line in text.split("\n"))
    assert "CHAPTER 1 – INTRODUCTION" in text


def test_word_paragraphs_and_tables_keep_document_order():
    text = _extracted("docx/word_sample.docx").text
    before = text.index("Here are some interesting things a respectful duck could eat:")
    table = text.index(" | Food | Calories per portion\nLeaves | Ash, Elm, Maple | 50\n")
    after = text.index("And let’s add another list in the end:")
    assert before < table < after


def test_merged_word_cells_appear_once_per_row_and_nested_tables_stay_inside_their_cell():
    lines = _extracted("docx/word_tables.docx").text.split("\n")
    assert "Cell 1.0 | Merged Cell 1.1 1.2 | Cell 1.3" in lines
    assert " | Cell 1.1" in lines  # a row that starts in the second column keeps its place
    assert "d | e, f; g&t, h | i" in _extracted("docx/docx-tables.docx").text.split("\n")


# --- files that are refused ----------------------------------------------------------------------


def test_an_unsupported_extension_is_refused_at_upload():
    with pytest.raises(ParseError, match=re.escape("“setup.exe” is not a supported type: upload a PDF")):
        check_supported("setup.exe")
    assert "is not a supported type" in _refusal("setup.exe", b"MZ\x90\x00")
    for extension in SUPPORTED_EXTENSIONS:
        check_supported(f"REPORT{extension.upper()}")


@pytest.mark.parametrize("filename", ["notes.txt", "paper.pdf", "letter.docx"])
def test_an_empty_file_is_refused_as_empty(filename):
    assert "is empty (0 bytes)" in _refusal(filename, b"")


def test_a_pdf_named_txt_is_refused_as_a_pdf():
    message = _refusal("report.txt", _bytes("pdf/scotus-transcript-p1.pdf"))
    assert "does not match its extension: it is a PDF document, not a text file. Rename it to .pdf" in message


def test_a_pdf_named_docx_is_refused_not_guessed():
    message = _refusal("report.docx", _bytes("pdf/scotus-transcript-p1.pdf"))
    assert "it is a PDF document, not a Word document (DOCX). Rename it to .pdf" in message


def test_a_text_file_named_pdf_is_refused_as_plain_text():
    message = _refusal("notes.pdf", b"Just some notes, typed in a text editor.\n")
    assert "does not match its extension: it is plain text, not a PDF. Rename it to .txt" in message


def test_a_word_document_named_txt_is_refused_as_a_word_document():
    message = _refusal("letter.txt", _bytes("docx/lorem_ipsum.docx"))
    assert "it is a Word document (DOCX), not a text file. Rename it to .docx" in message


def test_a_zip_that_is_not_a_word_document_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
    message = _refusal("archive.docx", buffer.getvalue())
    assert (
        "it is a ZIP archive, not a Word document (DOCX). Save it as a PDF, Word, Excel, PowerPoint, HTML, CSV or plain text file"
        in message
    )


def test_an_image_named_pdf_says_it_is_an_image():
    assert "it is a PNG image, not a PDF" in _refusal("scan.pdf", b"\x89PNG\r\n\x1a\n" + bytes(200))


@pytest.mark.parametrize("entry", PDFS, ids=_ids(PDFS))
def test_the_first_half_of_a_real_pdf_is_refused_as_truncated(entry):
    data = _bytes(entry["file"])
    assert "is damaged or truncated and cannot be read as a PDF" in _refusal("half.pdf", data[: len(data) // 2])


def test_a_cut_pdf_is_either_refused_or_read_whole_never_partly():
    data = _bytes("pdf/scotus-transcript-p1.pdf")
    whole = _extracted("pdf/scotus-transcript-p1.pdf").text
    cuts = [len(data) - n for n in (1, 3, 6, 12, 20, 40)] + [len(data) * k // 10 for k in range(1, 10)]
    outcomes = [_text_or_refusal("cut.pdf", data[:cut]) for cut in cuts]
    assert all(outcome == whole or "is damaged or truncated" in outcome for outcome in outcomes)
    assert whole in outcomes  # losing only the end marker costs nothing
    assert any(outcome != whole for outcome in outcomes)


def _text_or_refusal(filename: str, data: bytes) -> str:
    try:
        return extract(filename, data).text
    except ParseError as exc:
        return str(exc)


def test_garbage_behind_a_pdf_header_is_refused_as_damaged():
    garbage = random.Random(7).randbytes(20_000)
    assert "is damaged or truncated" in _refusal("garbage.pdf", b"%PDF-1.7\n" + garbage + b"\n%%EOF\n")
    assert "is damaged or truncated" in _refusal("stub.pdf", b"%PDF-1.4\n")


def test_a_password_protected_pdf_is_refused_as_encrypted():
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_bytes("pdf/scotus-transcript-p1.pdf"))))
    writer.encrypt("secret")
    message = _refusal("locked.pdf", _pdf_bytes(writer))
    assert "is encrypted with a password. Remove the password" in message


def test_a_pdf_with_only_an_owner_password_is_read():
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_bytes("pdf/scotus-transcript-p1.pdf"))))
    writer.encrypt(user_password="", owner_password="owner")
    assert extract("restricted.pdf", _pdf_bytes(writer)).text == _extracted("pdf/scotus-transcript-p1.pdf").text


def test_an_aes_pdf_with_only_an_owner_password_is_read():
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_bytes("pdf/scotus-transcript-p1.pdf"))))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-256")
    assert extract("restricted.pdf", _pdf_bytes(writer)).text == _extracted("pdf/scotus-transcript-p1.pdf").text


def test_a_pdf_without_a_text_layer_is_refused_when_ocr_is_off():
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    writer.add_blank_page(width=612, height=792)
    assert "has 2 of 2 page(s) without a text layer, and OCR is turned off here" in _refusal("scan.pdf", _pdf_bytes(writer))


def test_a_pdf_of_blank_pages_is_refused_after_ocr_finds_nothing():
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    writer.add_blank_page(width=612, height=792)
    message = _refusal("blank.pdf", _pdf_bytes(writer), ocr=OcrOptions(dpi=72))
    assert "has no text layer and OCR found no text on its 2 page(s): they look blank" in message


def test_a_5000_point_scanned_page_is_refused_before_it_is_drawn():
    """At 300 dpi the page would be a 434-million-pixel image (a decompression bomb for OCR)."""
    import time

    writer = PdfWriter()
    writer.add_blank_page(width=5000, height=5000)
    started = time.monotonic()
    message = _refusal("poster.pdf", _pdf_bytes(writer), ocr=OcrOptions())
    assert "Page 1 of “poster.pdf” is 5,000 × 5,000 points" in message
    assert "434 million pixels, over this server's limit of 40 million for one page (OCR_MAX_PAGE_PIXELS)" in message
    assert time.monotonic() - started < 5


def test_a_page_under_the_pixel_limit_is_drawn_and_read():
    writer = PdfWriter()
    writer.add_blank_page(width=1440, height=1440)  # 20 inches: 36 million pixels at 300 dpi
    assert "they look blank" in _refusal("wide.pdf", _pdf_bytes(writer), ocr=OcrOptions(dpi=300))


def test_ocr_that_needs_more_memory_than_its_limit_fails_with_a_message():
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    message = _refusal("scan.pdf", _pdf_bytes(writer), ocr=OcrOptions(max_memory_bytes=8 * 2**20))
    assert "needs more memory for OCR than this server allows one page (8 MB, OCR_MAX_MEMORY_MB)" in message


def test_a_truncated_word_document_is_refused_as_damaged():
    data = _bytes("docx/word_sample.docx")
    assert "is damaged and cannot be read as a Word document" in _refusal("cut.docx", data[: len(data) * 6 // 10])


def test_a_word_document_with_flipped_bytes_is_refused_as_damaged():
    data = bytearray(_bytes("docx/lorem_ipsum.docx"))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("word/document.xml")
    # Local header is 30 bytes plus the name and extra field; flip bytes in the middle of the compressed XML.
    middle = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size // 2
    data[middle : middle + 16] = bytes(b ^ 0xFF for b in data[middle : middle + 16])
    assert "is damaged and cannot be read as a Word document" in _refusal("flipped.docx", bytes(data))


def test_a_word_document_with_broken_xml_or_a_missing_part_is_refused_as_damaged():
    data = _bytes("docx/lorem_ipsum.docx")
    cut_xml = b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p>'
    assert "is damaged" in _refusal("broken.docx", _rezip(data, {"word/document.xml": cut_xml}))
    assert "is damaged" in _refusal("gutted.docx", _rezip(data, {"word/document.xml": None}))


def test_a_word_document_without_text_is_refused():
    buffer = io.BytesIO()
    docx.Document().save(buffer)
    assert "contains no text" in _refusal("blank.docx", buffer.getvalue())


def test_a_zip_bomb_is_refused_before_it_is_unpacked():
    bomb = _zip_of_zeros(300, compresslevel=1)
    message = _refusal("bomb.docx", bomb, max_unzipped_bytes=50 * 1024 * 1024)
    assert "unpacks to 300 MB, more than the 50 MB size cap for Word documents" in message


def test_an_absurdly_compressed_part_is_refused_even_under_the_size_cap():
    message = _refusal("dense.docx", _zip_of_zeros(10, compresslevel=9))
    assert "unpacks 1" in message
    assert "larger than it is stored, as zip bombs do, so it is refused under the 200 MB size cap" in message


# --- text and Markdown ---------------------------------------------------------------------------


def test_latin1_text_is_detected_and_decoded_correctly():
    original = "Café crème brûlée, naïve façade. " * 5
    extracted = extract("menu.txt", original.encode("latin-1"))
    assert extracted.text == original
    assert extracted.encoding == "cp1252"


def test_windows_1252_smart_quotes_are_decoded_correctly():
    original = "“Smart quotes” — Café crème brûlée, naïve façade.\r\n" * 4
    assert extract("quotes.md", original.encode("cp1252")).text == original.replace("\r\n", "\n")


def test_utf16_text_with_a_byte_order_mark_is_decoded():
    extracted = extract("grüße.txt", "Grüße aus Köln\r\nZweite Zeile\r\n".encode("utf-16"))
    assert extracted.text == "Grüße aus Köln\nZweite Zeile\n"
    assert extracted.encoding == "utf-16"
    assert extract("wide.txt", "Grüße".encode("utf-32")).text == "Grüße"


def test_utf8_byte_order_mark_is_dropped_and_newlines_become_line_feeds():
    extracted = extract("notes.md", b"\xef\xbb\xbf# Title\r\nold mac\rline\n")
    assert extracted.text == "# Title\nold mac\nline\n"
    assert extracted.encoding == "utf-8"
    assert extracted.kind == "text"


def test_text_with_nul_bytes_is_refused_as_binary():
    message = _refusal("data.txt", b"name,value\nalpha,\x00\x01\x02\n")
    assert "contains NUL bytes: it looks like a binary file, not text" in message


def test_text_in_an_undetectable_encoding_is_refused():
    noise = bytes(byte for byte in random.Random(3).randbytes(4000) if byte >= 0x80)
    message = _refusal("noise.txt", noise)
    assert "is not UTF-8 and its encoding could not be detected; save it as UTF-8" in message


def test_a_whitespace_only_text_file_is_refused_as_containing_no_text():
    assert "contains no text" in _refusal("blank.md", b" \n\t\r\n  ")


def test_one_enormous_line_is_extracted_whole():
    line = "word " * 400_000  # 2 MB, not one sentence break
    extracted = extract("dump.txt", line.encode())
    assert extracted.text == line
    assert extracted.pages == (Page(number=1, start=0, end=len(line)),)
    assert extracted.page_of(len(line) - 1) == 1


def test_a_markdown_file_that_mentions_a_pdf_header_is_still_text():
    assert extract("formats.md", b"A PDF starts with %PDF-1.7 on its first line.\n").kind == "text"


def test_sniff_kind_tells_text_from_unknown_binary():
    assert sniff_kind(b"plain words") == "text"
    assert sniff_kind(b"") is None
    assert sniff_kind(b"\x89PNG\r\n\x1a\n" + bytes(10)) is None
    assert sniff_kind(b"\x00\x01\x02\x03") is None


# --- page furniture ----------------------------------------------------------------------------


def test_running_heads_and_page_numbers_leave_every_page_but_the_first():
    bodies = ["The pier was rebuilt in May.", "Dredging cost 3 million pounds.", "Tonnage rose by 12 per cent.", "Two cranes were sold."]
    titles = ["Works", "Finance", "Trade", "Assets"]
    pages = [
        f"Harbour Authority Annual Report 2023\n{title}\n{body}\nThe board met {n} times.\nSee the notes.\nPage {n} of 4"
        for n, (title, body) in enumerate(zip(titles, bodies, strict=True), start=1)
    ]
    cleaned = strip_running_lines(pages)
    assert cleaned[0] == pages[0], "the first page keeps what the others repeat"
    for n, (page, title, body) in enumerate(zip(cleaned[1:], titles[1:], bodies[1:], strict=True), start=2):
        assert "Harbour Authority Annual Report" not in page
        assert f"Page {n} of 4" not in page
        assert page.startswith(title), "a line that changes with the page is its own"
        assert body in page
        assert f"The board met {n} times." in page, "a repeated line inside the page is content"


def test_a_short_document_or_a_line_on_few_pages_is_left_alone():
    words = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]

    def body(word: str) -> str:
        return f"\n{word} one.\n{word} two.\n{word} three.\n{word} four."

    two = ["Memo" + body("Alpha"), "Memo" + body("Beta")]
    assert strip_running_lines(two) == two
    heads = ["Results", "Methods", "Results", "Discussion", "Notes"]
    pages = [head + body(word) for head, word in zip(heads, words, strict=True)]
    assert strip_running_lines(pages) == pages, "two of five pages is under half"
    dates = ["01/29/2016", "03/01/2016", "03/08/2016", "08/03/2015"]
    firms = ["Acme", "Beta", "Gamma", "Delta", "Omega", "Sigma", "Kappa", "Theta"]
    table = [f"{date}\n{firms[2 * n]} {n}\nfiled\n{firms[2 * n + 1]} {n}\n{date}" for n, date in enumerate(dates)]
    assert strip_running_lines(table) == table, "figures and dates that open or close pages are data, not furniture"
    slides = [f"Quarterly review\nRevenue {n}" for n in range(5)]
    assert strip_running_lines(slides) == slides, "a page of a few lines is all edges: its lines are kept"


def test_a_pdf_with_running_heads_is_indexed_without_them(tmp_path):
    pdf = _pdf_with_pages(
        [
            f"Journal of Harbour Studies Vol. 9\nPart {'ABCD'[n - 1]}\nThe harbour handled {n * 100} ships.\nTrade rose.\nCranes: {n}.\n{n}"
            for n in range(1, 5)
        ]
    )
    extracted = extract("journal.pdf", pdf)
    assert extracted.text.count("Journal of Harbour Studies") == 1
    assert "The harbour handled 400 ships." in extracted.text
    assert "\n4\n" not in extracted.text + "\n", "page numbers counting up with the pages go too"
    assert [page.number for page in extracted.pages] == [1, 2, 3, 4]


def _pdf_with_pages(pages: list[str]) -> bytes:
    """A PDF whose pages show these texts in Helvetica, a line of the text a line of the page."""
    from tests.hostile import _pdf, _stream

    count = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(count)).encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % count]
    font = 3 + 2 * count
    for i, text in enumerate(pages):
        shown = b" T* ".join(b"(" + line.encode("latin-1") + b") Tj" for line in text.split("\n"))
        page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>"
        objects.append(page % (font, 4 + 2 * i))
        objects.append(_stream(b"BT /F1 12 Tf 14 TL 72 720 Td " + shown + b" ET"))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return _pdf(objects)
