"""What a hostile client sends: text the database cannot hold, text that misleads a reader,
wrong JSON types, nesting deep enough to exhaust a recursive parser, huge values — and files of
every kind the product accepts, built around them. The walks in tests/ops/test_hostile_inputs.py
send these to every write path."""

from __future__ import annotations

import io
import json
import zipfile
from functools import cache

# Text, by what is hostile about it.
TEXT = {
    "NUL": "a\x00b",
    "lone high surrogate": "x\ud800y",
    "lone low surrogate": "\udfff",
    "bell and ANSI escape": "ring \x07 the \x1b[31m bell",
    "DEL and a C1 control": "x\x7f\x85y",
    "right-to-left override": "Who \u202egnp.exe\u202c wrote this?",
    "zero-width space and BOM": "wh\u200bo\ufeff is it?",
    "line break and tab": "two\nlines\tand a tab",
    "emoji": "which 🔥 report?",
    "HTML": "<script>alert(1)</script><img src=x onerror=alert(1)>",
    "huge": "x" * 300_000,
    "blank": "   ",
}
# Text that no field may keep: PostgreSQL cannot hold NUL, psycopg cannot encode a lone
# surrogate, and control characters are smuggled, never typed.
UNSTORABLE = {"NUL", "lone high surrogate", "lone low surrogate", "bell and ANSI escape", "DEL and a C1 control"}
# A form body is decoded as UTF-8 with replacement: a lone surrogate arrives as U+FFFD, text.
SURROGATES = {"lone high surrogate", "lone low surrogate"}

# Other JSON values, as the raw text sent (the parser reads what no serializer could write).
JSON_VALUES = {
    "a number": "123",
    "a fraction": "0.5",
    "a negative number": "-1",
    "true": "true",
    "false": "false",
    "null": "null",
    "a list": '["a", "b"]',
    "an object": '{"$ne": null}',
    "a 400-digit integer": "1" + "0" * 400,
    "1e400": "1e400",
    "NaN": "NaN",
    "-Infinity": "-Infinity",
    "nested 50,000 deep": "[" * 50_000 + "]" * 50_000,
    "a number as text": '"0.5"',
    "true as text": '"true"',
}

# Whole request bodies.
JSON_BODIES = {
    "nested 100,000 deep": "[" * 100_000 + "]" * 100_000,
    "an object nested 40 deep": '{"a": ' * 40 + "1" + "}" * 40,
    "a list": '["x"]',
    "a string": '"x"',
    "a number": "7",
    "null": "null",
    "not JSON": "{not json",
    "a NUL key": '{"\\u0000": 1}',
    "a lone surrogate key": '{"\\ud800": 1}',
    "over 2 MB": '{"x": "' + "y" * 2_200_000 + '"}',
}

# File names, by what is hostile about them; "{ext}" is the kind's extension.
FILE_NAMES = {
    "path traversal": "../../../etc/passwd{ext}",
    "Windows path": "C:\\Windows\\system32\\notes{ext}",
    "NUL": "report\x00{ext}",
    "control characters": "re\x07port\x1b{ext}",
    "right-to-left override": "invoice\u202egnp{ext}",
    "300 characters": "n" * 300 + "{ext}",
    "dots only": "....{ext}",
}


def json_string(text: str) -> str:
    """`text` as a JSON string, with escapes for what cannot be written raw ("\\u0000", "\\ud800")."""
    return json.dumps(text)


def json_text(value) -> str:
    """A Python value as JSON, lone surrogates and NUL as escapes."""
    return json.dumps(value)


# --- documents -------------------------------------------------------------------------------------

SENTENCE = "The harbour beacon glows green every night, and ships count three flashes before the channel."


def document_bytes(extension: str, text: str) -> bytes:
    """A file of the kind `extension` whose text holds `text`, written the way each kind can
    carry it (lone surrogates as the bytes a broken encoder writes)."""
    if extension == ".pdf":
        return pdf_bytes(text)
    if extension == ".docx":
        return docx_bytes(text)
    if extension in (".xlsx", ".pptx"):
        return office_bytes(extension, text)
    if extension in (".html", ".htm"):
        escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return f"<!DOCTYPE html><html><body><h1>{SENTENCE}</h1><p>{escaped}</p></body></html>".encode("utf-8", "surrogatepass")
    if extension == ".csv":
        quoted = text.replace('"', '""')
        return f'note,detail\n"{SENTENCE}","{quoted}"\n'.encode("utf-8", "surrogatepass")
    return f"{SENTENCE}\n{text}\n{SENTENCE}\n".encode("utf-8", "surrogatepass")


def pdf_bytes(text: str, *, to_unicode: bytes | None = None) -> bytes:
    """A one-page PDF showing `text` in Helvetica; `to_unicode` is a broken font map (bfchar
    entries) that turns its glyphs into whatever code points it says."""
    shown = f"{SENTENCE} {text}".encode("latin-1", "replace").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
    content = b"BT /F1 12 Tf 72 720 Td (" + shown + b") Tj ET"
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica" + (b" /ToUnicode 6 0 R" if to_unicode else b"") + b" >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        font,
        _stream(content),
    ]
    if to_unicode:
        cmap = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Hostile def 1 begincodespacerange "
        cmap += b"<00> <FF> endcodespacerange " + to_unicode + b" endcmap CMapName currentdict /CMap defineresource pop end end"
        objects.append(_stream(cmap))
    return _pdf(objects)


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def _pdf(objects: list[bytes]) -> bytes:
    out, offsets = io.BytesIO(), []
    out.write(b"%PDF-1.4\n")
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


WORD = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx_bytes(text: str) -> bytes:
    """A Word document whose body's XML holds `text` as it is (XML cannot hold NUL, controls or
    lone surrogates: a file holding them is damaged, which is what a hostile one would be)."""
    from tests.pipeline.test_parsing import _rezip

    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    xml = f'<?xml version="1.0"?><w:document {WORD.decode()}><w:body><w:p><w:r><w:t>{SENTENCE} {escaped}</w:t></w:r></w:p></w:body></w:document>'
    return _rezip(_blank_docx(), {"word/document.xml": xml.encode("utf-8", "surrogatepass")})


PLACEHOLDER = "HOSTILE-PLACEHOLDER"


def office_bytes(extension: str, text: str) -> bytes:
    """A workbook (one cell) or a deck (one text box) whose XML holds SENTENCE and `text` as they
    are, written into the part where the library put a placeholder (as `docx_bytes` does)."""
    base, part = _office_base(extension)
    escaped = f"{SENTENCE} {text}".replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    from tests.pipeline.test_parsing import _rezip

    with zipfile.ZipFile(io.BytesIO(base)) as archive:
        xml = archive.read(part)
    return _rezip(base, {part: xml.replace(PLACEHOLDER.encode(), escaped.encode("utf-8", "surrogatepass"))})


@cache
def _office_base(extension: str) -> tuple[bytes, str]:
    buffer = io.BytesIO()
    if extension == ".xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        book.active.append(["note"])
        book.active.append([PLACEHOLDER])
        book.save(buffer)
        return buffer.getvalue(), "xl/worksheets/sheet1.xml"  # openpyxl writes strings inline
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[6]).shapes.add_textbox(
        Inches(1), Inches(1), Inches(6), Inches(2)
    ).text_frame.text = PLACEHOLDER
    deck.save(buffer)
    return buffer.getvalue(), "ppt/slides/slide1.xml"


def deep_docx(depth: int) -> bytes:
    from tests.pipeline.test_parsing import _rezip

    body = (
        b"<w:p><w:r><w:t>"
        + SENTENCE.encode()
        + b"</w:t></w:r></w:p>"
        + b"<w:sdt><w:sdtContent>" * depth
        + b"</w:sdtContent></w:sdt>" * depth
    )
    return _rezip(
        _blank_docx(), {"word/document.xml": b'<?xml version="1.0"?><w:document ' + WORD + b"><w:body>" + body + b"</w:body></w:document>"}
    )


@cache
def _blank_docx() -> bytes:
    import docx

    buffer = io.BytesIO()
    docx.Document().save(buffer)
    return buffer.getvalue()


# --- evaluation sets ---------------------------------------------------------------------------------

VALID_ROW = {
    "question": "When does the harbour beacon glow?",
    "answerable": True,
    "expected_answer": "every night",
    "expected_source": "harbour.txt",
}
# Python values a file may hold where text (or true / false) belongs.
WRONG_TYPES = {"a number": 123, "true": True, "null": None, "a list": ["a", 1], "an object": {"a": 1}}


def eval_file(kind: str, rows: list[dict]) -> bytes:
    """Rows in the format `kind` ("jsonl", "csv" or "squad"); values as they are (a CSV has only text)."""
    if kind == "jsonl":
        return "\n".join(json.dumps(row) for row in rows).encode()
    if kind == "csv":
        lines = [",".join(VALID_ROW)] + [",".join(_csv_cell(row.get(name, "")) for name in VALID_ROW) for row in rows]
        return "\n".join(lines).encode("utf-8", "surrogatepass")
    qas = [
        {"question": row["question"], "is_impossible": _impossible(row["answerable"]), "answers": [{"text": row["expected_answer"]}]}
        for row in rows
    ]
    return json.dumps({"version": "v2.0", "data": [{"title": "Harbour", "paragraphs": [{"context": SENTENCE, "qas": qas}]}]}).encode()


def _csv_cell(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return '"' + text.replace('"', '""') + '"'


def _impossible(answerable):
    return (not answerable) if isinstance(answerable, bool) else answerable
