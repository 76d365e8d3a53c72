"""The embedder's forward pass in ONNX Runtime, for speed (issue 44).

sentence-transformers stays the embedding API: its tokenizer cuts and pads the texts, and its
model is what is exported. The export is made here from the shipped weights, offline, once per
machine: the transformer with its mean pooling and normalisation traced into one graph (fp32),
and optionally that graph with its MatMul and embedding weights quantised to int8 per channel
(dynamic quantisation: activations stay float). It is cached under `<var>/models/` in a folder
named by the weights' checksum, with MODEL.json recording both checksums, so a changed model is
exported afresh and never mistaken for the old one.

Sessions run with graph optimisation on. ONNX Runtime fixes a session's threads when it is made,
so there is one session per thread count, chosen by the calling thread's torch setting: the
worker's ingestion lanes (`apps/core/serving.py`) set it per thread, and keep doing so.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import threading
import warnings
from pathlib import Path

import numpy as np

BACKENDS = ("torch", "onnx", "onnx-int8")
EXPORT_VERSION = 1  # bump when the graph or the quantisation changes: the cache folder changes with it
_OPSET = 17


class OnnxUnsupported(Exception):
    """The model cannot be exported as this module does it (not mean-pooled, say)."""


def weights_digest(model_path: str | Path) -> str:
    """sha256 over the model folder's weight and tokenizer files, in name order."""
    folder = Path(model_path)
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in {".safetensors", ".bin", ".json", ".txt"})
    if not files:
        raise OnnxUnsupported(f"{folder} holds no model files to export")
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(_sha256(path).encode())
    return digest.hexdigest()


def exported(model, model_path: str | Path, cache_dir: Path, *, int8: bool) -> Path:
    """The ONNX file for `model` (a loaded SentenceTransformer from `model_path`), exported into
    `cache_dir` the first time and found there afterwards. Processes exporting at once wait for
    one another (a file lock), so each finds the other's file."""
    name = f"{'int8' if int8 else 'fp32'}-v{EXPORT_VERSION}-{weights_digest(model_path)[:16]}"
    folder = Path(cache_dir) / "embedder" / name
    target = folder / "model.onnx"
    if (folder / "MODEL.json").exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "MODEL.json").exists():
            _export(model, folder, int8=int8)
            card = {
                "source": str(model_path),
                "source_sha256": weights_digest(model_path),
                "format": "onnx, int8 dynamic per-channel (MatMul, Gather)" if int8 else "onnx, fp32",
                "opset": _OPSET,
                "export_version": EXPORT_VERSION,
                "onnx_sha256": _sha256(target),
            }
            (folder / "MODEL.json").write_text(json.dumps(card, indent=1) + "\n")
    return target


def _export(model, folder: Path, *, int8: bool) -> None:
    import torch

    _check_exportable(model)
    net = _pooled(model[0].auto_model.eval())
    fp32 = folder / ("model.fp32.onnx" if int8 else "model.onnx")
    ids = torch.ones(2, 16, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0  # a padded row, so that tracing keeps the attention mask in the graph
    axes = {0: "batch", 1: "tokens"}
    # The tracer warns about Python branches in the model's attention code that do not change
    # the graph for these inputs; the exported graph is checked against torch by the tests.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            net,
            (ids, mask, torch.zeros_like(ids)),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "embedding": {0: "batch"}},
            opset_version=_OPSET,
            dynamo=False,
        )
    if int8:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # Per channel, and the embedding table too: per-tensor int8 lost up to 0.13 of cosine to
        # the fp32 vectors on SciFact abstracts; per channel, at least 0.989 (docs/benchmarks.md).
        quiet = logging.getLogger().level
        logging.getLogger().setLevel(logging.ERROR)  # the quantiser logs advice meant for its developers at WARNING
        try:
            quantize_dynamic(
                str(fp32),
                str(folder / "model.onnx"),
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul", "Gather"],
                per_channel=True,
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            logging.getLogger().setLevel(quiet)
        fp32.unlink()


def _check_exportable(model) -> None:
    modules = list(model)
    pooling = modules[1] if len(modules) > 1 else None
    mode = getattr(pooling, "pooling_mode", None)
    mode = mode if isinstance(mode, str) else pooling.get_pooling_mode_str() if hasattr(pooling, "get_pooling_mode_str") else None
    if not hasattr(modules[0], "auto_model") or mode != "mean":
        raise OnnxUnsupported("only a transformer with mean pooling is exported to ONNX; use EMBEDDING_BACKEND=torch for this model")


def _pooled(transformer):
    """The transformer, mean pooling over real tokens, and unit length: sentence-transformers'
    own steps for a mean-pooled model, as one module to trace."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            states = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(states.dtype)
            mean = (states * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    return Pooled(transformer)


class OnnxForward:
    """Runs an exported graph: texts in, unit vectors out, tokenised as sentence-transformers does."""

    def __init__(self, path: Path, tokenizer, max_length: int):
        self.path = Path(path)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="np")
        ids = encoded["input_ids"].astype(np.int64)
        feeds = {
            "input_ids": ids,
            "attention_mask": encoded["attention_mask"].astype(np.int64),
            "token_type_ids": encoded["token_type_ids"].astype(np.int64) if "token_type_ids" in encoded else np.zeros_like(ids),
        }
        return np.asarray(self.session(_threads()).run(None, feeds)[0], dtype=np.float32)

    def session(self, threads: int):
        with self._lock:
            if threads not in self._sessions:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                self._sessions[threads] = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
            return self._sessions[threads]


def _threads() -> int:
    import torch

    return max(1, torch.get_num_threads())


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
