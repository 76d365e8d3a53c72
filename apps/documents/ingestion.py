"""Ingestion: documents claimed, extracted, cut into chunks, embedded and written, one at a time
(`document_ingest`) or many as one embedding stream (`documents_ingest_many`, issue 44). The
upload services (`apps/documents/services.py`) store the files and queue them; the worker and
`manage.py ingest` call these."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from datetime import timedelta

import psutil
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from pgvector import Vector

from apps.core.guard import storable
from apps.core.serving import configured_ingestion_lanes, cores
from apps.documents.models import Document, DocumentStatus
from apps.documents.signals import document_text_changed
from apps.documents.sql import documents_mark_written, unit_vectors_write, write_chunks
from apps.pipeline.embedding import DIMENSIONS, INGESTION_STREAMS, pack_vectors, product_embedder, set_torch_threads
from apps.pipeline.parsing import Extracted, OcrOptions, ParseError, extract
from apps.pipeline.text import chunk_text, passage_header, unit_reads
from apps.pipeline.types import ChunkDraft
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import settings_get

log = logging.getLogger(__name__)


def document_ingest(*, workspace: Workspace, document_id) -> Document | None:
    """Extract, chunk, embed and index one document. Safe to run twice, or after a worker died.
    None when the document is not claimable (settled, or another worker holds it)."""
    settled = documents_ingest_many(workspace=workspace, document_ids=[document_id])
    return settled[0] if settled else None


def documents_ingest_many(*, workspace: Workspace, document_ids: Iterable, on_settled=None) -> list[Document]:
    """Ingest documents of one workspace as one embedding stream (issue 44). Each is claimed,
    extracted and cut in turn; their texts are embedded together, a window of about
    INGEST_STREAM_TEXTS distinct texts at a time, so small documents fill whole batches of texts of
    one length instead of one small batch each; and each window's documents are written, and
    searchable, as soon as its texts are embedded. While one window is embedded the next is parsed
    (parsing takes a core and the database, embedding the rest), and a window goes to the embedder
    early when the embedder is idle, once it holds a few batches. A window is also closed once it
    has waited INGEST_STREAM_WAIT_S, so a document never waits long on the parsing of those after
    it.

    A document that is settled or that another worker holds is skipped. `on_settled(document)` is
    called for each document as it becomes ready or failed; the documents settled here are
    returned in that order."""
    with contextlib.ExitStack() as counted, ThreadPoolExecutor(max_workers=1, thread_name_prefix="stream") as embedder:
        stream, sharing = _Stream(workspace, embedder, on_settled), False
        for document_id in document_ids:
            if not _claim(workspace, document_id):
                log.info("document %s is not claimable (settled, or another worker holds it)", document_id)
                continue
            if not sharing:
                # The ingestion counts among those sharing the cores from its first claim on, not
                # only while it embeds: its parse takes a core too (a parser process), and a
                # neighbour that read it as idle would run torch on both cores against it.
                counted.enter_context(INGESTION_STREAMS.claimed())
                sharing = True
            stream.add(_parse(workspace, document_id, stream.options, waiting=stream.waiting()))
        stream.finish()
    return stream.settled


@dataclass
class _Embedding:
    """A window on the embedder: its future (the vectors) and how many of its texts are done,
    counted by the embedding thread and written as progress by the stream's."""

    window: list
    future: Future
    done: list[int]  # one counter, shared with the embedding thread
    total: int


class _Stream:
    """The state of documents_ingest_many. Everything that touches the database runs on the
    calling thread; the embedding thread only computes."""

    def __init__(self, workspace: Workspace, embedder: ThreadPoolExecutor, on_settled):
        self.workspace, self.embedder, self.on_settled = workspace, embedder, on_settled
        self.options = settings_get(workspace=workspace)
        self.settled: list[Document] = []
        self.window: list[_Parsed] = []
        self.window_texts = 0  # its documents' texts, chunks and units
        self.opened = 0.0
        self.running: _Embedding | None = None
        self.reported = 0.0

    def waiting(self) -> list:
        """The documents claimed and not yet written (their claims are kept alive)."""
        running = self.running.window if self.running is not None else []
        return [p.document.pk for p in [*running, *self.window]]

    def add(self, parsed: _Parsed | Document) -> None:
        if isinstance(parsed, Document):  # it failed
            self._settle([parsed])
            return
        if not self.window:
            self.opened = time.monotonic()
        self.window.append(parsed)
        self.window_texts += parsed.texts
        texts = self.window_texts
        idle = self.running is None or self.running.future.done()
        if (
            texts >= settings.INGEST_STREAM_TEXTS
            or time.monotonic() - self.opened >= settings.INGEST_STREAM_WAIT_S
            or (idle and texts >= STREAM_START_BATCHES * settings.EMBEDDING_BATCH_SIZE)
        ):
            self._close()
        elif self.running is not None:
            self._report(self.running)

    def finish(self) -> None:
        if self.window:
            self._close()
        if self.running is not None:
            self._land()

    def _close(self) -> None:
        """The window to the embedder, once the one before it is written."""
        if self.running is not None:
            self._land()
        window, self.window, self.window_texts = self.window, [], 0
        total = len({text for parsed in window for group in parsed.groups for text in group})
        done = [0]
        self.running = _Embedding(window, self.embedder.submit(_embed_with_progress, window, done), done, total)

    def _land(self) -> None:
        """Wait for the running window, writing its progress meanwhile, then write it."""
        running, self.running = self.running, None
        ids = [p.document.pk for p in running.window]
        while True:
            try:
                embedded = running.future.result(timeout=PROGRESS_EVERY_S)
            except FutureTimeout:
                self._report(running)
                continue
            except OverBudget as exc:
                self._settle([_mark_failed(parsed.document, str(exc)) for parsed in running.window])
                return
            break
        _progress_share(ids, running.total, running.total)
        self._settle(_write_window(self.workspace, running.window, embedded))

    def _report(self, running: _Embedding) -> None:
        if time.monotonic() - self.reported >= PROGRESS_EVERY_S and running.total:
            _progress_share([p.document.pk for p in running.window], running.done[0], running.total)
            self.reported = time.monotonic()

    def _settle(self, documents: list[Document]) -> None:
        for document in documents:
            self.settled.append(document)
            if self.on_settled is not None:
                self.on_settled(document)


# A window goes to an idle embedder once it holds this many batches of texts: fewer would run
# batches of mixed lengths and write the database more often than they save.
STREAM_START_BATCHES = 4


@dataclass
class _Parsed:
    """A claimed document cut into chunks, waiting for its vectors: for each chunk, its text (the
    vector retrieval searches) and then its units (the vectors reranking reads; a table row under
    its heading line)."""

    document: Document
    extracted: Extracted
    drafts: list[ChunkDraft]
    groups: list[list[str]]
    chunking: tuple[int, int]

    @property
    def texts(self) -> int:
        return sum(len(group) for group in self.groups)


def _parse(workspace: Workspace, document_id, options, *, waiting: Sequence = ()) -> _Parsed | Document:
    """The claimed document extracted and cut, or the document marked failed. `waiting`: the
    documents of the open window, whose claims are kept alive while an OCR parse runs long."""
    document = Document.objects.get(workspace=workspace, pk=document_id)
    try:
        extracted = _extract(document, options, waiting=waiting)
    except ParseError as exc:
        return _mark_failed(document, str(exc))
    # What the database cannot hold (NUL, lone surrogates from a broken PDF font map) becomes
    # U+FFFD, one for one, so chunk offsets and citations still point where they did.
    extracted = replace(extracted, text=storable(extracted.text))
    drafts = chunk_text(extracted.text, size=options.chunk_size, overlap=options.chunk_overlap)
    if len(drafts) > options.max_document_chunks:
        return _mark_failed(document, _too_many_chunks(document, len(drafts), options.max_document_chunks))
    groups = [[d.text, *unit_reads(d.text, passage_header(d.text, d.start, extracted.text))] for d in drafts]
    _progress(document, 0, len(groups))
    return _Parsed(document, extracted, drafts, groups, (options.chunk_size, options.chunk_overlap))


def _write_window(workspace: Workspace, window: Sequence[_Parsed], embedded: list[list]) -> list[Document]:
    """A window's documents, with their vectors, written in one transaction: ready."""
    now = timezone.now()
    with transaction.atomic():  # the locations change with the chunks that cite them, never before
        for parsed in window:
            _locations_write(parsed.document, parsed.extracted)
        writes = [
            ChunkWrite(p.document, p.extracted, p.drafts, [group[0] for group in groups], p.chunking)
            for p, groups in zip(window, embedded, strict=True)
        ]
        document_chunks_write_many(workspace=workspace, writes=writes)
        with connection.cursor() as cursor:
            for parsed, groups in zip(window, embedded, strict=True):
                rows = [(d.ordinal, pack_vectors(group[1:])) for d, group in zip(parsed.drafts, groups, strict=True)]
                unit_vectors_write(cursor, workspace_id=workspace.pk, document_id=parsed.document.pk, rows=rows, now=now)
    written = Document.objects.in_bulk([p.document.pk for p in window])
    for parsed in window:
        document_text_changed.send(sender=Document, workspace=workspace, document_id=parsed.document.pk)
    return [written[p.document.pk] for p in window]


def _claim(workspace: Workspace, document_id) -> bool:
    """queued → processing, or take over a processing claim whose worker stopped beating."""
    now = timezone.now()
    lapsed = Q(status=DocumentStatus.PROCESSING, heartbeat_at__lt=now - timedelta(seconds=settings.INGEST_LEASE_S))
    claimable = Document.objects.filter(Q(status=DocumentStatus.QUEUED) | lapsed, workspace=workspace, pk=document_id)
    return (
        claimable.update(
            status=DocumentStatus.PROCESSING, error="", heartbeat_at=now, attempts=F("attempts") + 1, progress_done=0, progress_total=0
        )
        == 1
    )


def _embed_with_progress(window: Sequence[_Parsed], done: list[int]) -> list[list]:
    """Each group's texts embedded (a chunk and its units), for every document of the window, in
    batches of texts of about one length (Embedder.batches): a batch is padded to its longest
    text, so a sentence batched with its chunk would cost the chunk's length (bench_ingest: 0.40
    of embedding alone in document order, docs/benchmarks.md). The batches go longest first: a
    batch of long chunks takes a quarter of a second on one thread, so one left for last kept its
    lane running while the other lanes had nothing left to do (six alternated bench_ingest pairs:
    11.61 s mean against 11.75 s shortest first, faster in all six). A text met twice in the
    window (a sentence in the overlap of two chunks, a repeated heading or paragraph: 144 of the
    shared docs' 1,168) is embedded once (ten alternated bench_ingest pairs: 9.63 s mean against
    9.84 s, faster in seven). `done[0]` counts the distinct texts embedded (the stream writes it
    as each document's progress, in its own chunks). It runs on the stream's embedding thread and
    touches no database. The batches run in lanes of their own, as many side by side as this
    ingestion's share of the cores (apps.core.serving.ingestion_lanes), counted again as each
    batch ends and as other ingestions start or end; the lanes' threads end with the ingestion,
    so no thread keeps their torch setting. Returns, per document, its groups' vectors."""
    import numpy as np

    embedder = product_embedder()
    # Each distinct text's row, in the order first met.
    position = {text: i for i, text in enumerate(dict.fromkeys(t for parsed in window for group in parsed.groups for t in group))}
    texts = list(position)
    vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    label = _window_label(window)

    def encode(batch: list[int], torch_threads: int) -> int:
        set_torch_threads(torch_threads)
        vectors[batch] = embedder.embed([texts[i] for i in batch])
        return len(batch)

    pending = iter(reversed(embedder.batches(texts, settings.EMBEDDING_BATCH_SIZE)))
    running: set[Future] = set()
    with ThreadPoolExecutor(max_workers=cores(), thread_name_prefix="embed") as lanes:
        while True:
            change = INGESTION_STREAMS.changed()
            share = configured_ingestion_lanes(INGESTION_STREAMS.count)
            while len(running) < share.batches and (batch := next(pending, None)) is not None:
                running.add(lanes.submit(encode, batch, share.torch_threads))
            if not running:
                break
            # Woken by a batch that ends, or by an ingestion that starts or ends (its share changes).
            finished, _ = wait(running | {change}, return_when=FIRST_COMPLETED)
            finished.discard(change)
            running -= finished
            if finished:
                done[0] += sum(future.result() for future in finished)
                _check_memory(label)
    return [[vectors[[position[text] for text in group]] for group in parsed.groups] for parsed in window]


# How often an ingestion writes its progress (and heartbeat) while it embeds: each write is an
# UPDATE, and a window of small documents ends a batch every few milliseconds.
PROGRESS_EVERY_S = 0.5


def _window_label(window: Sequence[_Parsed]) -> str:
    first = f"“{window[0].document.filename}”"
    return first if len(window) == 1 else f"{first} and {len(window) - 1} other file(s)"


class OverBudget(Exception):
    """An ingestion passed one of its limits; the message names it and says how to raise it."""


def _too_many_chunks(document: Document, count: int, limit: int) -> str:
    return (
        f"“{document.filename}” makes {count:,} passages, more than the {limit:,} this workspace indexes from one document "
        "(the setting “Passages per document at most”). Split it into smaller files and upload those, or an admin raises "
        "the limit in the workspace's settings and re-indexes it."
    )


def _check_memory(label: str) -> None:
    """The worker's memory, read as each batch ends: past WORKER_MAX_MEMORY_MB the ingestion under
    way stops (and frees what it holds) rather than let one file take the machine. `label` names
    the files being embedded."""
    limit = settings.WORKER_MAX_MEMORY_MB
    if limit and (used := psutil.Process().memory_info().rss) > limit * 2**20:
        raise OverBudget(
            f"Indexing {label} stopped: the worker's memory reached {used // 2**20:,} MB, over its limit of "
            f"{limit:,} MB (WORKER_MAX_MEMORY_MB). Re-index it when fewer documents are being indexed, or split it into smaller files."
        )


def _progress(document: Document, done: int, total: int, unit: str = "chunks") -> None:
    Document.objects.filter(pk=document.pk, status=DocumentStatus.PROCESSING).update(
        progress_done=done, progress_total=total, progress_unit=unit, heartbeat_at=timezone.now()
    )


def _progress_share(document_ids: Sequence, done: int, total: int) -> None:
    """Each document's progress as the share done/total of its own chunks, in one UPDATE."""
    Document.objects.filter(pk__in=document_ids, status=DocumentStatus.PROCESSING).update(
        progress_done=F("progress_total") * done / total, progress_unit="chunks", heartbeat_at=timezone.now()
    )


def _heartbeat(document_ids: Sequence) -> None:
    if document_ids:
        Document.objects.filter(pk__in=document_ids, status=DocumentStatus.PROCESSING).update(heartbeat_at=timezone.now())


def _extract(document: Document, options, *, waiting: Sequence = ()) -> Extracted:
    """The document's text; pages without a text layer are read by OCR in the workspace's
    language, and the progress counts them as they are read (and keeps the claims of the
    `waiting` documents alive: OCR can take minutes)."""
    ocr = None
    if settings.OCR_ENABLED:
        ocr = OcrOptions(
            language=options.ocr_language,
            max_pages=settings.OCR_MAX_PAGES,
            time_limit_s=settings.OCR_TIME_LIMIT_S,
            dpi=settings.OCR_DPI,
            threads=settings.OCR_THREADS,
            max_page_pixels=settings.OCR_MAX_PAGE_PIXELS,
            max_memory_bytes=settings.OCR_MAX_MEMORY_MB * 2**20,
        )
    return extract(
        document.filename,
        _read(document),
        max_unzipped_bytes=settings.INGEST_MAX_UNZIPPED_BYTES,
        max_sheet_cells=options.max_sheet_cells,
        ocr=ocr,
        on_ocr_page=lambda done, total: (_progress(document, done, total, unit="pages"), _heartbeat(waiting)),
        parser_processes=settings.PARSER_PROCESSES,
    )


def _locations_write(document: Document, extracted: Extracted) -> None:
    Document.objects.filter(pk=document.pk).update(locations=extracted.locations, ocr_page_count=extracted.ocr_page_count)


@dataclass(frozen=True)
class ChunkWrite:
    """One document's chunks for `document_chunks_write_many`: its extracted text, the drafts cut
    from it and one vector per draft (a (len(drafts), DIMENSIONS) float array or list of rows)."""

    document: Document
    extracted: Extracted
    drafts: Sequence[ChunkDraft]
    vectors: Sequence
    chunking: tuple[int | None, int | None] = (None, None)  # the chunk size and overlap the drafts were cut with


def document_chunks_write(*, document: Document, extracted: Extracted, drafts, vectors, chunking: tuple[int, int]) -> None:
    """Write a document's chunks, their vectors and keyword statistics, and mark it ready; all in
    one transaction: a re-run replaces them, never adds to them. Ingestion calls it."""
    document_chunks_write_many(workspace=document.workspace, writes=[ChunkWrite(document, extracted, drafts, vectors, chunking)])


def document_chunks_write_many(*, workspace: Workspace, writes: Sequence[ChunkWrite]) -> int:
    """`document_chunks_write` for several documents of one workspace in one transaction and one
    pass: the rows go in with one COPY and one INSERT that computes their token counts and BM25
    vectors on the way (no chunk is updated after it is written), and each document is weighted as
    if the documents had been written one at a time, in this order. A bulk import that parsed and
    embedded elsewhere calls it (bench_scale). Returns the number of chunks written."""
    documents = [w.document for w in writes]
    if any(d.workspace_id != workspace.pk for d in documents):
        raise ValueError("every document of a chunk write must belong to its workspace")
    if len({d.pk for d in documents}) != len(documents):
        raise ValueError("a chunk write names each document once")
    if not writes:
        return 0
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        written = write_chunks(cursor, workspace_id=workspace.pk, document_ids=[d.pk for d in documents], rows=_rows(writes), now=now)
        documents_mark_written(
            cursor,
            workspace_id=workspace.pk,
            documents=[
                (w.document.pk, w.extracted.kind, w.extracted.text, w.extracted.page_count, len(w.drafts), *w.chunking) for w in writes
            ],
            status=DocumentStatus.READY,
            now=now,
            embedder=product_embedder().identity,
        )
    return written


def _rows(writes: Sequence[ChunkWrite]):
    """The staged rows of write_chunks, in its column order, vectors in pgvector's binary form."""
    for seq, write in enumerate(writes):
        extracted, document_id = write.extracted, write.document.pk
        for draft, vector in zip(write.drafts, write.vectors, strict=True):
            yield (
                seq,
                document_id,
                draft.ordinal,
                draft.text,
                extracted.page_of(draft.start),
                extracted.page_of(draft.end - 1),
                draft.start,
                draft.end,
                Vector(vector).to_binary(),
            )


def _mark_failed(document: Document, message: str) -> Document:
    document_mark_failed(workspace=document.workspace, document_id=document.pk, message=message)
    document.refresh_from_db()
    return document


def _read(document: Document) -> bytes:
    with document.file.open("rb") as handle:
        return handle.read()


def document_mark_failed(*, workspace: Workspace, document_id, message: str) -> None:
    Document.objects.filter(workspace=workspace, pk=document_id).exclude(status=DocumentStatus.READY).update(
        status=DocumentStatus.FAILED, error=message, updated_at=timezone.now()
    )
