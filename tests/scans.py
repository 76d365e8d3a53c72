"""Scanned documents made from real ones: a page of a real PDF drawn to a grey image (by poppler's
pdftoppm, as a scanner would hand it over) and saved as a PDF holding only that image (Pillow), so
it has no text layer at all (bench.scans makes them); and how many of the original's words an OCR
reading recovered."""

from __future__ import annotations

import functools
import io
import re
from collections import Counter

from pypdf import PdfReader, PdfWriter

from bench import scans as bench_scans
from tests.pipeline.test_parsing import DOCS


@functools.cache
def scanned_pdf(relative: str, pages: tuple[int, ...] = (1,), dpi: int = 200) -> bytes:
    """An image-only PDF of these pages (1-based) of a real PDF of shared/data/docs."""
    return bench_scans.scanned_pdf([(DOCS / relative, number) for number in pages], dpi)


def with_text_page_first(scan: bytes, relative: str) -> bytes:
    """A PDF whose first page is page 1 of a real PDF (with its text layer) and the rest the scan."""
    writer = PdfWriter()
    writer.add_page(PdfReader(io.BytesIO((DOCS / relative).read_bytes())).pages[0])
    for page in PdfReader(io.BytesIO(scan)).pages:
        writer.add_page(page)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def original_text(relative: str, number: int = 1) -> str:
    return PdfReader(DOCS / relative).pages[number - 1].extract_text()


def words(text: str) -> Counter:
    return Counter(re.findall(r"[a-z0-9]+", text.lower()))


def recovered_share(original: str, read: str) -> float:
    """The share of the original's words (counted with repeats) that the reading holds."""
    want = words(original)
    return sum((want & words(read)).values()) / sum(want.values())
