"""OCR of the PDF pages that have no text layer: poppler's pdftoppm renders each such page to a
grey image at a fixed resolution, and Tesseract reads it; each page is checked against a pixel
limit before it is drawn, and both programs run under a memory limit (prlimit).

pdftoppm rather than the images pypdf can pull out of a page: it draws the page as a viewer does —
every image of it in place, cropped and rotated, in any of the PDF's image codecs (JBIG2 and CCITT
scans included, which pypdf cannot decode), and vector outlines of text too — at the resolution
Tesseract reads best. Both are Debian packages (scripts/install-ocr.sh installs them).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytesseract

from apps.pipeline.parsing.base import ParseError

Progress = Callable[[int, int], None]  # (pages read, pages to read)
PDFTOPPM, TESSERACT = "pdftoppm", "tesseract"  # found on PATH
LANGUAGE = re.compile(r"^[A-Za-z0-9_]{3,}(\+[A-Za-z0-9_]{3,})*$")
_INSTALL_HINT = "the server needs Debian's tesseract-ocr and poppler-utils (scripts/install-ocr.sh installs them)"


@dataclass(frozen=True)
class OcrOptions:
    language: str = "eng"  # Tesseract's language code(s), "eng" or "deu+eng"
    max_pages: int = 100  # pages without a text layer one document may have
    time_limit_s: float = 600.0  # for all the OCR of one document
    dpi: int = 300
    threads: int = 1  # Tesseract's OpenMP threads: more than one is several times slower on a busy machine
    # A page drawn at `dpi` may have at most this many pixels (an A4 page at 300 dpi has 8.7
    # million, A2 35 million): a 5,000-point page would be a 434-million-pixel image.
    max_page_pixels: int = 40_000_000
    # The address space of each pdftoppm and Tesseract process (prlimit): a page that needs more
    # fails with a message, not by taking the machine's memory.
    max_memory_bytes: int = 1024 * 1024 * 1024


def read_pages(filename: str, data: bytes, numbers: list[int], options: OcrOptions, on_page: Progress | None) -> dict[int, str]:
    """The OCR text of these pages (1-based numbers), all of them or a ParseError: a document read
    in part would let people believe the rest was searched."""
    if len(numbers) > options.max_pages:
        raise ParseError(
            f"“{filename}” has {len(numbers)} scanned pages (no text layer), more than the {options.max_pages} pages "
            "this server reads by OCR in one document. Split it into smaller PDFs and upload those."
        )
    _check_page_sizes(filename, data, numbers, options)
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
        image = _render(source, number, options, left)
        return _tesseract(image, options, max(left, 1))
    except subprocess.TimeoutExpired:
        raise _OutOfTime from None
    except FileNotFoundError:
        raise ParseError(
            f"“{filename}” has scanned pages that need OCR, but OCR is not installed on this server: {_INSTALL_HINT}."
        ) from None
    except _OutOfMemory:
        raise ParseError(
            f"Page {number} of “{filename}” needs more memory for OCR than this server allows one page "
            f"({options.max_memory_bytes // 2**20:,} MB, OCR_MAX_MEMORY_MB). Scale the page down or run OCR on it before uploading."
        ) from None
    except subprocess.CalledProcessError as exc:
        if exc.cmd[0] == TESSERACT:
            raise _tesseract_failed(filename, number, options.language, (exc.stderr or b"").decode("utf-8", "replace")) from None
        raise ParseError(
            f"Page {number} of “{filename}” could not be drawn for OCR: the PDF may be damaged. Export it again and upload the new copy."
        ) from None
    finally:
        for leftover in source.parent.glob("page*"):
            leftover.unlink()


class _OutOfMemory(Exception):
    """pdftoppm or Tesseract ran out of the memory its limit allows."""


# What pdftoppm, Tesseract (and its Leptonica) and the loader print when an allocation fails;
# pdftoppm and Tesseract can still exit 0 then, with a blank page or none.
_OUT_OF_MEMORY = ("out of memory", "bad_alloc", "cannot allocate", "failed to map segment", "error in pix")


def _run(command: list[str], options: OcrOptions, left: float, env: dict[str, str] | None = None) -> bytes:
    """`command`'s output, run under util-linux's prlimit with its address space capped at
    max_memory_bytes (a preexec_fn setting the limit is not safe in a process with threads, as
    the worker is). FileNotFoundError when the program is not installed."""
    if shutil.which(command[0]) is None:
        raise FileNotFoundError(command[0])
    limited = ["prlimit", f"--as={options.max_memory_bytes}", "--", *command]
    done = subprocess.run(limited, capture_output=True, timeout=left, env=env)
    if any(sign in done.stderr.decode("utf-8", "replace").lower() for sign in _OUT_OF_MEMORY):
        raise _OutOfMemory
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, command, done.stdout, done.stderr)
    return done.stdout


def _render(source: Path, number: int, options: OcrOptions, left: float) -> Path:
    target = source.parent / "page"
    _run(
        [PDFTOPPM, "-r", str(options.dpi), "-gray", "-f", str(number), "-l", str(number), "-singlefile", str(source), str(target)],
        options,
        left,
    )
    return target.with_suffix(".pgm")


def _tesseract(image: Path, options: OcrOptions, left: float) -> str:
    # OMP_THREAD_LIMIT: Tesseract's OpenMP threads, for its process only.
    environment = os.environ | {"OMP_THREAD_LIMIT": str(options.threads)}
    return _run([TESSERACT, str(image), "stdout", "-l", options.language], options, left, environment).decode("utf-8", "replace")


def _check_page_sizes(filename: str, data: bytes, numbers: list[int], options: OcrOptions) -> None:
    """Refuse, before drawing anything, a page whose image at `dpi` would pass max_page_pixels."""
    from pypdf import PdfReader

    pages = PdfReader(io.BytesIO(data), strict=False).pages
    for number in numbers:
        page = pages[number - 1]
        box, unit = page.cropbox, float(page.user_unit or 1)
        width, height = float(box.width) * unit, float(box.height) * unit
        pixels = (width / 72 * options.dpi) * (height / 72 * options.dpi)
        if pixels > options.max_page_pixels:
            raise ParseError(
                f"Page {number} of “{filename}” is {width:,.0f} × {height:,.0f} points: drawn for OCR at {options.dpi} dpi it "
                f"would be {pixels / 1e6:,.0f} million pixels, over this server's limit of {options.max_page_pixels / 1e6:,.0f} "
                "million for one page (OCR_MAX_PAGE_PIXELS). Scale the page down or split it, or run OCR on it before uploading."
            )


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
