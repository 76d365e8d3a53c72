"""OCR of the PDF pages that have no text layer: poppler's pdftoppm renders each such page to a
grey image at a fixed resolution, and Tesseract (through pytesseract) reads it.

pdftoppm rather than the images pypdf can pull out of a page: it draws the page as a viewer does —
every image of it in place, cropped and rotated, in any of the PDF's image codecs (JBIG2 and CCITT
scans included, which pypdf cannot decode), and vector outlines of text too — at the resolution
Tesseract reads best. Both are Debian packages (scripts/install-ocr.sh installs them).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytesseract

from apps.pipeline.parsing.base import ParseError

Progress = Callable[[int, int], None]  # (pages read, pages to read)
LANGUAGE = re.compile(r"^[A-Za-z0-9_]{3,}(\+[A-Za-z0-9_]{3,})*$")
_INSTALL_HINT = "the server needs Debian's tesseract-ocr and poppler-utils (scripts/install-ocr.sh installs them)"


@dataclass(frozen=True)
class OcrOptions:
    language: str = "eng"  # Tesseract's language code(s), "eng" or "deu+eng"
    max_pages: int = 100  # pages without a text layer one document may have
    time_limit_s: float = 600.0  # for all the OCR of one document
    dpi: int = 300
    threads: int = 1  # Tesseract's OpenMP threads: more than one is several times slower on a busy machine


def read_pages(filename: str, data: bytes, numbers: list[int], options: OcrOptions, on_page: Progress | None) -> dict[int, str]:
    """The OCR text of these pages (1-based numbers), all of them or a ParseError: a document read
    in part would let people believe the rest was searched."""
    if len(numbers) > options.max_pages:
        raise ParseError(
            f"“{filename}” has {len(numbers)} scanned pages (no text layer), more than the {options.max_pages} pages "
            "this server reads by OCR in one document. Split it into smaller PDFs and upload those."
        )
    deadline = time.monotonic() + options.time_limit_s
    texts = {}
    with tempfile.TemporaryDirectory(prefix="trustrag-ocr-") as folder:
        source = Path(folder) / "document.pdf"
        source.write_bytes(data)
        for done, number in enumerate(numbers):
            if on_page is not None:
                on_page(done, len(numbers))
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise _OutOfTime
                texts[number] = _read_page(filename, source, number, options, left)
            except _OutOfTime:
                raise _too_slow(filename, done, len(numbers), options) from None
    if on_page is not None:
        on_page(len(numbers), len(numbers))
    return texts


class _OutOfTime(Exception):
    """The document's OCR time ran out while a page was being drawn or read."""


def _read_page(filename: str, source: Path, number: int, options: OcrOptions, left: float) -> str:
    try:
        image = _render(source, number, options.dpi, left)
        with _tesseract_threads(options.threads):
            return pytesseract.image_to_string(str(image), lang=options.language, timeout=max(left, 1))
    except subprocess.TimeoutExpired:
        raise _OutOfTime from None
    except (FileNotFoundError, pytesseract.TesseractNotFoundError):
        raise ParseError(
            f"“{filename}” has scanned pages that need OCR, but OCR is not installed on this server: {_INSTALL_HINT}."
        ) from None
    except subprocess.CalledProcessError:
        raise ParseError(
            f"Page {number} of “{filename}” could not be drawn for OCR: the PDF may be damaged. Export it again and upload the new copy."
        ) from None
    except pytesseract.TesseractError as exc:
        raise _tesseract_failed(filename, number, options.language, str(exc)) from None
    except RuntimeError as exc:  # pytesseract's own timeout
        if "timeout" not in str(exc).lower():
            raise
        raise _OutOfTime from None
    finally:
        for leftover in source.parent.glob("page*"):
            leftover.unlink()


@contextlib.contextmanager
def _tesseract_threads(threads: int):
    """OMP_THREAD_LIMIT for the Tesseract process pytesseract starts (it passes this process's
    environment on), put back as it was at once: nothing else of this process reads it by then."""
    before = os.environ.get("OMP_THREAD_LIMIT")
    os.environ["OMP_THREAD_LIMIT"] = str(threads)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("OMP_THREAD_LIMIT", None)
        else:
            os.environ["OMP_THREAD_LIMIT"] = before


def _render(source: Path, number: int, dpi: int, left: float) -> Path:
    target = source.parent / "page"
    command = ["pdftoppm", "-r", str(dpi), "-gray", "-f", str(number), "-l", str(number), "-singlefile", str(source), str(target)]
    subprocess.run(command, check=True, capture_output=True, timeout=left)
    return target.with_suffix(".pgm")


def _tesseract_failed(filename: str, number: int, language: str, detail: str) -> ParseError:
    if "Failed loading language" in detail or "Error opening data file" in detail:
        return ParseError(
            f"“{filename}” needs OCR in “{language}”, a language this server's Tesseract does not have. "
            f"Choose an installed OCR language in the workspace's settings (or install tesseract-ocr-{language.split('+')[0]}), then re-index it."
        )
    return ParseError(
        f"OCR failed on page {number} of “{filename}” ({detail.strip()[:200]}). Upload a clearer scan or a PDF with a text layer."
    )


def _too_slow(filename: str, done: int, total: int, options: OcrOptions) -> ParseError:
    return ParseError(
        f"OCR of “{filename}” stopped after {done} of {total} scanned pages at the {options.time_limit_s:g}-second limit "
        "for one document. Split it into smaller PDFs (or run OCR on it before uploading) and upload those."
    )


def installed_languages() -> set[str] | None:
    """The languages this machine's Tesseract reads; None when Tesseract is not installed."""
    try:
        return set(pytesseract.get_languages(config="")) - {"osd"}
    except (pytesseract.TesseractNotFoundError, pytesseract.TesseractError, OSError):
        return None
