from __future__ import annotations

import time
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand, CommandError
from pypdf import PdfReader

from apps.documents.models import Chunk, Document
from apps.documents.services import document_create, documents_upload
from apps.pipeline.embedding import Embedder, default_model_path
from apps.pipeline.text import passage_header, unit_reads
from bench.common import celery_worker, data_path, emit, progress, temporary_workspace, wait_settled
from bench.scans import scanned_pdf


class Command(BaseCommand):
    help = "Ingest every file under DIR through the upload service (as the page uploads them) and the Celery worker; compare with embedding alone."

    def add_arguments(self, parser):
        parser.add_argument("--files", type=Path, default=data_path("docs"))
        parser.add_argument("--json", dest="json_path")
        parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the worker to settle every file")
        parser.add_argument(
            "--scan-pages",
            type=int,
            default=4,
            help="pages of the PDFs under DIR drawn to images (a scan, no text layer) and ingested by OCR",
        )

    def handle(self, *args, files: Path, json_path: str | None, timeout: float, scan_pages: int, **options):
        files = Path(files)
        paths = sorted(p for p in files.rglob("*") if p.is_file()) if files.is_dir() else []
        if not paths:
            raise CommandError(f"No files under {files}.")
        with celery_worker() as worker_note:
            with temporary_workspace("ingest") as workspace:
                progress(f"worker: {worker_note}; {len(paths)} file(s)")
                rows, seconds = _ingest_all(workspace, paths, timeout)
                texts = _chunk_and_unit_texts(workspace)
                embed_only = _embed_only_rate(texts)
            with temporary_workspace("ocr") as workspace:
                ocr = _ocr_rate(workspace, paths, scan_pages, timeout)
        chunks_per_s = len(texts) / seconds if seconds else 0.0  # texts: one entry per chunk
        result = {
            "files": rows,
            "chunks": len(texts),
            "seconds": round(seconds, 3),
            "chunks_per_s": round(chunks_per_s, 2),
            "embed_only_chunks_per_s": round(embed_only, 2),
            "ratio": round(chunks_per_s / embed_only, 4) if embed_only else 0.0,
            **ocr,
        }
        emit(result, json_path, self.stdout)


def _ingest_all(workspace, paths: list[Path], timeout: float) -> tuple[list[dict], float]:
    rows: dict[str, dict] = {}
    documents: dict[str, Document] = {}
    started = time.perf_counter()
    # As the Documents page sends them: up to UPLOAD_MAX_FILES files an upload, each upload one
    # batch that the worker ingests as one embedding stream.
    for first in range(0, len(paths), settings.UPLOAD_MAX_FILES):
        sent = paths[first : first + settings.UPLOAD_MAX_FILES]
        uploads = [SimpleUploadedFile(path.name, path.read_bytes()) for path in sent]
        _, outcomes = documents_upload(workspace=workspace, actor=None, uploads=uploads)
        for path, outcome in zip(sent, outcomes, strict=True):
            if outcome.error is not None:
                rows[path.name] = {
                    "name": path.name,
                    "status": "refused",
                    "error": outcome.error.message,
                    "pages": 0,
                    "chunks": 0,
                    "seconds": 0.0,
                }
            else:
                documents[path.name] = outcome.document
    wait_settled(workspace, timeout)
    elapsed = time.perf_counter() - started
    for name, document in documents.items():
        document.refresh_from_db()
        seconds = (document.updated_at - document.created_at).total_seconds()
        rows[name] = {
            "name": name,
            "status": document.status,
            "error": document.error,
            "pages": document.page_count,
            "chunks": document.chunk_count,
            "seconds": round(seconds, 3),
            "ocr_pages": document.ocr_page_count,
        }
    return [rows[p.name] for p in paths], elapsed


def _ocr_rate(workspace, paths: list[Path], pages: int, timeout: float) -> dict:
    """One scan of the first `pages` pages of the PDFs (no text layer, so every page is read by
    OCR) through the upload service and the worker: pages read by OCR per second of its ingestion."""
    chosen = [(path, number) for path in paths if path.suffix.lower() == ".pdf" for number in range(1, _page_count(path) + 1)][:pages]
    if not chosen:
        return {"ocr_pages": 0, "ocr_seconds": 0.0, "ocr_pages_per_s": 0.0, "ocr_error": "no PDF pages to scan"}
    progress(f"OCR: a scan of {len(chosen)} page(s)")
    document, _ = document_create(workspace=workspace, actor=None, filename="bench-scan.pdf", data=scanned_pdf(chosen))
    wait_settled(workspace, timeout)
    document.refresh_from_db()
    seconds = (document.updated_at - document.created_at).total_seconds()
    rate = document.ocr_page_count / seconds if seconds else 0.0
    return {
        "ocr_pages": document.ocr_page_count,
        "ocr_seconds": round(seconds, 3),
        "ocr_pages_per_s": round(rate, 3),
        "ocr_error": document.error,
    }


def _page_count(path: Path) -> int:
    try:
        return len(PdfReader(path).pages)
    except Exception:  # a broken PDF of the corpus is ingest's to report, not a page to scan
        return 0


def _chunk_and_unit_texts(workspace) -> list[list[str]]:
    """What ingestion embedded, chunk by chunk: the chunk's text and its units' reads."""
    chunks = Chunk.objects.filter(workspace=workspace).order_by("document_id", "ordinal")
    documents = dict(Document.objects.filter(workspace=workspace).values_list("id", "text"))
    return [
        [c.text, *unit_reads(c.text, passage_header(c.text, c.start_offset, documents[c.document_id]))]
        for c in chunks.only("text", "start_offset", "document_id")
    ]


def _embed_only_rate(groups: list[list[str]]) -> float:
    """The same texts (each chunk and its units) through the same embedder and batch size,
    nothing else: chunks a second."""
    if not groups:
        return 0.0
    # An embedder of its own, so that nothing this process embedded before is cached.
    embedder = Embedder(settings.EMBEDDING_MODEL or default_model_path(), settings.EMBEDDING_BATCH_SIZE, cache_size=0)
    embedder.embed(["warm up"])
    started = time.perf_counter()
    embedder.embed([text for group in groups for text in group])
    return len(groups) / (time.perf_counter() - started)
