"""The embedder's ONNX Runtime backends (apps/pipeline/onnx_embedding.py): exported once from the
shipped weights into a cache folder named by their checksum, found there afterwards, and giving
the vectors PyTorch gives (fp32: the same to rounding; int8: within a small angle), alone or in
batches, and across threads with their own thread counts. The real all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from apps.pipeline.embedding import Embedder, default_model_path, get_embedder, set_torch_threads
from apps.pipeline.onnx_embedding import OnnxUnsupported, weights_digest

TEXTS = [
    "The Halvorsen bridge is 412 metres long.",
    "Lighthouse keepers slept on average 5.8 hours a day during night-shift weeks.",
    "Texas 146,982",
    "What is the estimated cost per product of the AOA sensor system test?",
    "A much longer passage about the harbour, its piers, the tide gauge that the harbour master reads at six every "
    "morning, and the book in which every reading has been logged since the harbour opened in 1897.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return Embedder(default_model_path()).embed(TEXTS)


# int8 quantises activations with one scale per batch, so a text's vector moves a little with the
# texts batched beside it; fp32 is the same alone or in a batch.
@pytest.mark.parametrize(("backend", "least_cosine", "batched"), [("onnx", 0.9999, 0.9999), ("onnx-int8", 0.98, 0.98)])
def test_the_onnx_backends_give_the_vectors_torch_gives(cache, reference, backend, least_cosine, batched):
    vectors = Embedder(default_model_path(), backend=backend, export_dir=cache).embed(TEXTS)
    assert vectors.shape == reference.shape
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4), "unit length, as stored"
    assert (vectors * reference).sum(axis=1).min() >= least_cosine
    alone = Embedder(default_model_path(), backend=backend, export_dir=cache).embed([TEXTS[2]])
    assert float(alone[0] @ vectors[2]) >= batched, "a text alone and in a batch"


def test_the_export_is_made_once_and_says_what_it_came_from(cache):
    Embedder(default_model_path(), backend="onnx-int8", export_dir=cache).embed(["warm"])
    (folder,) = [p for p in (cache / "embedder").iterdir() if p.name.startswith("int8-")]
    card = json.loads((folder / "MODEL.json").read_text())
    assert card["source_sha256"] == weights_digest(default_model_path())
    assert folder.name.endswith(card["source_sha256"][:16])
    assert len(card["onnx_sha256"]) == 64
    made = (folder / "model.onnx").stat().st_mtime_ns
    Embedder(default_model_path(), backend="onnx-int8", export_dir=cache).embed(["again"])
    assert (folder / "model.onnx").stat().st_mtime_ns == made, "found, not exported again"
    assert not (folder / "model.fp32.onnx").exists(), "the fp32 step is not kept beside the int8 graph"


def test_threads_with_their_own_thread_counts_share_one_embedder(cache, reference):
    embedder = Embedder(default_model_path(), backend="onnx-int8", export_dir=cache)
    results, errors = {}, []

    def run(threads: int):
        try:
            set_torch_threads(threads)
            results[threads] = embedder.embed(TEXTS, batch_size=2)
        except Exception as exc:  # the assertion below names it
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    assert np.allclose(results[1], results[2], atol=1e-4)
    assert sorted(embedder._forward._sessions) == [1, 2], "one session per thread count"


def test_what_cannot_be_exported_says_so(tmp_path):
    with pytest.raises(ValueError, match="Unknown embedding backend 'tensorrt'"):
        Embedder(default_model_path(), backend="tensorrt")
    with pytest.raises(ValueError, match="needs a folder"):
        Embedder(default_model_path(), backend="onnx")
    with pytest.raises(OnnxUnsupported, match="not a local folder"):
        _ = Embedder("sentence-transformers/all-MiniLM-L6-v2", backend="onnx", export_dir=tmp_path).model


def test_the_product_embedder_follows_the_setting(settings, tmp_path):
    settings.EMBEDDING_BACKEND, settings.VAR_DIR = "onnx-int8", tmp_path
    embedder = get_embedder()
    assert embedder.backend == "onnx-int8"
    assert embedder.export_dir.name == "models", "exported under the var folder"
    assert get_embedder(backend="torch").backend == "torch"
