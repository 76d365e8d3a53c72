"""Scans made from real PDFs: pages drawn to grey images by poppler's pdftoppm, as a scanner hands
them over, saved as a PDF holding only those images (Pillow) — no text layer at all. bench_ingest
times OCR on them; the tests check what OCR recovers of the originals."""

from __future__ import annotations

import io
import subprocess
import tempfile
from pathlib import Path

from PIL import Image


def scanned_pdf(pages: list[tuple[Path, int]], dpi: int = 200) -> bytes:
    """An image-only PDF of these (PDF file, 1-based page number) pages, in order."""
    images = [page_image(path, number, dpi) for path, number in pages]
    buffer = io.BytesIO()
    images[0].save(buffer, format="PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def page_image(path: Path, number: int, dpi: int) -> Image.Image:
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "scan"
        command = ["pdftoppm", "-r", str(dpi), "-gray", "-f", str(number), "-l", str(number), "-singlefile", str(path), str(target)]
        subprocess.run(command, check=True, capture_output=True)
        with Image.open(target.with_suffix(".pgm")) as image:
            return image.copy()
