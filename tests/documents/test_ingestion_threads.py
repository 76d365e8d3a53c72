"""An ingestion runs torch on its share of the cores: all of them when it embeds alone, one each
when two ingestions of the process embed at once (the worker's two threads), counted before every
batch; the thread's own setting is put back after."""

from __future__ import annotations

import threading

import torch
from django.conf import settings

from apps.core.serving import cores, ingestion_torch_threads
from apps.pipeline.embedding import INGESTION_STREAMS, get_embedder
from tests.documents.test_unit_vectors import ingest
from tests.queries.test_generation import LIGHTHOUSE


def _threads_per_encode(personas, monkeypatch, name: str) -> list[int]:
    """torch's threads at each encoding of one ingestion (a document of its own, by name)."""
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    embedder.forget()  # every text is encoded, none recalled
    seen: list[int] = []
    real = embedder._encode
    monkeypatch.setattr(embedder, "_encode", lambda texts, batch_size: seen.append(torch.get_num_threads()) or real(texts, batch_size))
    ingest(personas, name, f"{LIGHTHOUSE}\n\nFiled as {name}.")
    monkeypatch.setattr(embedder, "_encode", real)
    assert seen, "the ingestion encoded nothing"
    return seen


def test_an_ingestion_alone_embeds_on_every_core_and_shares_them_with_another(personas, monkeypatch):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert set(_threads_per_encode(personas, monkeypatch, "alone.txt")) == {cores()}
        assert torch.get_num_threads() == 1  # put back
        shared = _threads_while_another_embeds(personas, monkeypatch)
    finally:
        torch.set_num_threads(before)
    assert set(shared) == {max(1, cores() // 2)}
    assert INGESTION_STREAMS.count == 0


def _threads_while_another_embeds(personas, monkeypatch) -> list[int]:
    claimed, release = threading.Event(), threading.Event()

    def another_ingestion():
        with INGESTION_STREAMS.claimed():
            claimed.set()
            release.wait(60)

    other = threading.Thread(target=another_ingestion)
    other.start()
    try:
        assert claimed.wait(10)
        return _threads_per_encode(personas, monkeypatch, "shared.txt")
    finally:
        release.set()
        other.join()


def test_the_share_is_the_cores_split_among_the_ingestions_embedding_unless_set():
    assert ingestion_torch_threads(1, cpus=2) == 2
    assert ingestion_torch_threads(2, cpus=2) == 1
    assert ingestion_torch_threads(3, cpus=2) == 1
    assert ingestion_torch_threads(2, cpus=8) == 4
    assert ingestion_torch_threads(1, torch_threads=3, cpus=2) == 3
