"""An ingestion embeds on its share of the cores: as many one-thread batches side by side as the
cores when it is the only ingestion under way, one at a time when two are (the worker's two
threads), counted again as each batch ends and as other ingestions start or end;
WORKER_TORCH_THREADS runs one batch at a time on that many threads instead. The real worker code
path, the real embedder."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch
from django.conf import settings

from apps.core.serving import Lanes, cores, ingestion_lanes
from apps.documents import ingestion, services
from apps.documents.models import Chunk, Document, DocumentStatus, UnitVectors
from apps.documents.tasks import ingest_document
from apps.pipeline.embedding import INGESTION_STREAMS, get_embedder, unpack_vectors
from tests.documents.test_unit_vectors import ingest
from tests.queries.test_generation import LIGHTHOUSE

# Sentences of several lengths, so the document's texts make more than one batch.
LONG = " ".join(
    [
        LIGHTHOUSE,
        "Its keepers lived on the reef for weeks at a time.",
        "A signal tower on the island of Tiree let the keepers and their families exchange news "
        "by flag and by lamp, and a museum in the old signal station now tells the story of the "
        "tower, its builders and the men who kept its light burning through the storms of the "
        "nineteenth century.",
    ]
)


def _encodes(personas, monkeypatch, name: str) -> list[tuple[int, int]]:
    """(torch's threads, encodings running at that moment) at each encoding of one ingestion."""
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    embedder.forget()  # every text is encoded, none recalled
    seen: list[tuple[int, int]] = []
    running = [0]
    lock = threading.Lock()
    real = embedder._encode

    def watched(texts, batch_size):
        with lock:
            running[0] += 1
            seen.append((torch.get_num_threads(), running[0]))
        try:
            time.sleep(0.3)  # long enough for a lane beside it to start
            return real(texts, batch_size)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(embedder, "_encode", watched)
    ingest(personas, name, f"{LONG}\n\nFiled as {name}.")
    monkeypatch.setattr(embedder, "_encode", real)
    assert len(seen) >= 2, "the document made one batch; the test needs more"
    return seen


def test_an_ingestion_alone_runs_batches_side_by_side_and_one_at_a_time_beside_another(personas, monkeypatch):
    before = torch.get_num_threads()
    alone = _encodes(personas, monkeypatch, "alone.txt")
    assert {threads for threads, _ in alone} == {1}
    assert max(at_once for _, at_once in alone) == min(2, cores())  # two batches at least, one per core
    shared = _encodes_while_another_ingests(personas, monkeypatch)
    assert {threads for threads, _ in shared} == {1}
    assert max(at_once for _, at_once in shared) == 1
    assert torch.get_num_threads() == before  # the ingesting thread's own setting is untouched
    assert INGESTION_STREAMS.count == 0


def test_a_fixed_torch_thread_count_runs_one_batch_at_a_time(personas, monkeypatch, settings):
    settings.WORKER_TORCH_THREADS = 2
    seen = _encodes(personas, monkeypatch, "fixed.txt")
    assert {threads for threads, _ in seen} == {2}
    assert max(at_once for _, at_once in seen) == 1


def test_an_ingestion_embeds_its_longest_texts_first(personas, monkeypatch, settings):
    """Its last batches are its shortest, so the lanes end together: a batch of long chunks left
    for last would keep one lane running while the others have nothing to do."""
    settings.WORKER_TORCH_THREADS = 1  # one batch at a time: they start in the order they were queued
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    embedder.forget()
    real, longest = embedder._encode, []

    def watched(texts, batch_size):
        longest.append(max(embedder.token_lengths(texts)))
        return real(texts, batch_size)

    monkeypatch.setattr(embedder, "_encode", watched)
    document = ingest(personas, "longest.txt", f"{LONG}\n\nFiled as longest.txt.")
    monkeypatch.setattr(embedder, "_encode", real)
    assert document.status == DocumentStatus.READY
    assert len(longest) >= 2, "the document made one batch; the test needs more"
    assert longest == sorted(longest, reverse=True)
    assert longest[0] > longest[-1]


def test_a_text_met_twice_in_a_document_is_embedded_once_and_stored_for_each(personas, monkeypatch):
    """A paragraph repeated, or a sentence in the overlap of two chunks, is one embedding; every
    chunk and unit still stores the vector of its own text."""
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    embedder.forget()
    real_embed, real_plan = embedder.embed, ingestion._embed_with_progress
    embedded: list[str] = []
    planned: list[list[str]] = []

    def watched(texts):
        embedded.extend(texts)
        return real_embed(texts)

    def plan(window, done):
        planned.extend(group for parsed in window for group in parsed.groups)
        return real_plan(window, done)

    monkeypatch.setattr(embedder, "embed", watched)
    monkeypatch.setattr(ingestion, "_embed_with_progress", plan)
    document = ingest(personas, "repeated.txt", f"{LONG}\n\n{LIGHTHOUSE}\n\nFiled as repeated.txt.")
    monkeypatch.setattr(embedder, "embed", real_embed)
    assert document.status == DocumentStatus.READY
    texts = [text for group in planned for text in group]
    assert len(set(texts)) < len(texts), "the document repeats no text; the test needs one that does"
    assert sorted(embedded) == sorted(set(texts))
    for chunk, group in zip(Chunk.objects.filter(document=document).order_by("ordinal"), planned, strict=True):
        assert np.abs(np.array(chunk.embedding) - real_embed(group[:1])[0]).max() < 1e-3
        stored = unpack_vectors(UnitVectors.objects.get(document=document, ordinal=chunk.ordinal).vectors)
        assert np.abs(stored - real_embed(group[1:])).max() < 1e-3


def _encodes_while_another_ingests(personas, monkeypatch) -> list[tuple[int, int]]:
    claimed, release = threading.Event(), threading.Event()

    def another_ingestion():
        with INGESTION_STREAMS.claimed():
            claimed.set()
            release.wait(60)

    other = threading.Thread(target=another_ingestion)
    other.start()
    try:
        assert claimed.wait(10)
        return _encodes(personas, monkeypatch, "shared.txt")
    finally:
        release.set()
        other.join()


def test_an_ingestion_takes_a_core_the_moment_another_ingestion_frees_it(personas, monkeypatch):
    """Beside another ingestion it runs one batch at a time; when the other one ends, its second
    batch starts at once, while the first is still running, not when the first ends."""
    monkeypatch.setattr("apps.core.serving.cores", lambda: 2)
    monkeypatch.setattr(ingestion, "cores", lambda: 2)
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    embedder.forget()
    real, starts, ends = embedder._encode, [], []
    claimed, release = threading.Event(), threading.Event()

    def another_ingestion():
        with INGESTION_STREAMS.claimed():
            claimed.set()
            release.wait(60)

    def watched(texts, batch_size):
        starts.append(time.monotonic())
        if len(starts) == 1:
            threading.Timer(0.2, release.set).start()  # the other ingestion ends while this batch runs
        try:
            time.sleep(1.5 if len(starts) == 1 else 0)
            return real(texts, batch_size)
        finally:
            ends.append(time.monotonic())

    other = threading.Thread(target=another_ingestion)
    other.start()
    try:
        assert claimed.wait(10)
        monkeypatch.setattr(embedder, "_encode", watched)
        document = ingest(personas, "freed.txt", f"{LONG}\n\nFiled as freed.txt.")
    finally:
        release.set()
        other.join()
    assert document.status == DocumentStatus.READY
    assert len(starts) >= 2, "the document made one batch; the test needs more"
    assert starts[1] < ends[0]  # the second batch did not wait for the first
    assert starts[1] - starts[0] < 1.0
    assert INGESTION_STREAMS.count == 0


def test_the_count_of_ingestions_under_way_wakes_whoever_waits_on_its_change():
    change = INGESTION_STREAMS.changed()
    assert INGESTION_STREAMS.changed() is change  # one future for all who wait
    assert not change.done()
    with INGESTION_STREAMS.claimed():
        assert change.result(timeout=1) == 1
        leaving = INGESTION_STREAMS.changed()
        assert leaving is not change
        assert not leaving.done()
    assert leaving.result(timeout=1) == 0


def test_a_batch_that_fails_in_its_lane_fails_the_ingestion_with_its_message_and_writes_nothing(personas, monkeypatch):
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    embedder.forget()
    real, calls = embedder._encode, []

    def failing(texts, batch_size):
        calls.append(len(texts))
        if len(calls) == 2:
            raise MemoryError("out of memory in the second batch")
        return real(texts, batch_size)

    monkeypatch.setattr(embedder, "_encode", failing)
    document, _ = services.document_create(
        workspace=personas.workspace_a, actor=None, filename="fails.txt", data=LONG.encode(), enqueue=False
    )
    with pytest.raises(MemoryError):
        ingest_document(str(personas.workspace_a.pk), str(document.pk))
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED
    assert document.error == "Ingestion failed (MemoryError): out of memory in the second batch"
    assert not Chunk.objects.filter(document=document).exists()
    assert INGESTION_STREAMS.count == 0
    monkeypatch.setattr(embedder, "_encode", real)
    services.document_reindex(workspace=personas.workspace_a, actor=None, document_id=document.pk)
    assert ingest_document(str(personas.workspace_a.pk), str(document.pk)) == DocumentStatus.READY  # nothing was lost
    assert Chunk.objects.filter(document=document).count() == Document.objects.get(pk=document.pk).chunk_count > 0


def test_the_share_is_the_cores_split_among_the_ingestions_under_way_unless_set():
    assert ingestion_lanes(1, cpus=2) == Lanes(batches=2, torch_threads=1)
    assert ingestion_lanes(2, cpus=2) == Lanes(batches=1, torch_threads=1)
    assert ingestion_lanes(3, cpus=2) == Lanes(batches=1, torch_threads=1)
    assert ingestion_lanes(2, cpus=8) == Lanes(batches=4, torch_threads=1)
    assert ingestion_lanes(1, torch_threads=3, cpus=2) == Lanes(batches=1, torch_threads=3)
