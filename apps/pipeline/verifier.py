"""The trained MiniLM pair verifier: does a passage support a claim, does it answer a question.

Plain Python and torch (no Django), so the pipeline, the benchmarks and the training code in
`training/verifier/` share one definition of the network:

    verifier = Verifier.load("models/verifier", threads=2)
    verifier.support([(quote, claim)])          # [{"supports": p, "contradicts": p, "not_found": p}]
    verifier.answerability([(sentence, question)])  # [p(answers)]

models/verifier ships the int8 ONNX graph (run by onnxruntime, the measured fastest); the torch
backends need the fp16 safetensors, which training/verifier/export.py keeps in the run's folder.

One encoder, mean-pooled (all-MiniLM-L6-v2 was trained with mean pooling, so its [CLS] vector
means little), with two linear heads. Pairs go in passage first, claim/question second, truncated
`longest_first` to the max_length the model was trained with (MODEL.json).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

SUPPORT_LABELS = ("supports", "contradicts", "not_found")  # index order of the support head
WEIGHTS_FILE = "model.safetensors"
ONNX_FILE = "model.onnx"
DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "models" / "verifier"


class VerifierNet(nn.Module):
    """BERT encoder -> masked mean pool -> (support logits [B, 3], answerability logits [B, 2])."""

    def __init__(self, encoder: nn.Module, hidden: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.support_head = nn.Linear(hidden, len(SUPPORT_LABELS))
        self.answer_head = nn.Linear(hidden, 2)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = self.dropout((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0))
        return self.support_head(pooled), self.answer_head(pooled)


def build_net(encoder_dir: Path | str, attention: str | None = None) -> VerifierNet:
    """A VerifierNet with the encoder architecture (config.json) of `encoder_dir`, weights not loaded.

    attention="eager" for ONNX export: the SDPA path drops an all-ones mask while tracing, and the
    exported graph would then ignore padding."""
    from transformers import BertConfig, BertModel

    extra = {"attn_implementation": attention} if attention else {}
    config = BertConfig.from_pretrained(str(encoder_dir), local_files_only=True, **extra)
    return VerifierNet(BertModel(config, add_pooling_layer=False), config.hidden_size)


@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    # torch's intra-op pool is process-wide: set it only for the duration of a call and put the
    # caller's value back, so loading a Verifier never changes how the rest of the process runs.
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Verifier:
    """Inference over short pairs; backend "onnx" (int8, the shipped default), "torch" (fp32) or "int8" (torch dynamic)."""

    def __init__(self, net: Any, tokenizer: Any, meta: dict, *, backend: str, threads: int | None, batch_size: int) -> None:
        self.net = net  # a VerifierNet, or an onnxruntime.InferenceSession for backend "onnx"
        self.tokenizer = tokenizer
        self.meta = meta
        self.backend = backend
        self.threads = threads
        self.batch_size = batch_size
        self.max_length = int(meta.get("max_length", 128))

    @classmethod
    def load(
        cls,
        path: Path | str = DEFAULT_PATH,
        *,
        threads: int | None = None,
        backend: str = "auto",
        batch_size: int | None = None,
        attention: str | None = None,
        onnx_file: str = ONNX_FILE,
    ) -> Verifier:
        from transformers import AutoTokenizer

        path = Path(path)
        meta = json.loads((path / "MODEL.json").read_text()) if (path / "MODEL.json").exists() else {}
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        if backend == "auto":  # what the folder ships: int8 ONNX (the measured fastest) or fp16 weights
            backend = "onnx" if (path / onnx_file).exists() else "torch"
        if batch_size is None:
            # int8 quantises activations with one scale per call, so a pair's score would depend on
            # its batch neighbours (and padding); one pair per call is exact and, measured, faster.
            batch_size = 32 if backend == "torch" else 1
        if backend == "onnx":
            import onnxruntime as ort

            options = ort.SessionOptions()
            if threads is not None:  # per-session, not process-wide
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(str(path / onnx_file), options, providers=["CPUExecutionProvider"])
            return cls(session, tokenizer, meta, backend=backend, threads=threads, batch_size=batch_size)
        if backend not in ("torch", "int8"):
            raise ValueError(f"unknown backend {backend!r}")
        from safetensors.torch import load_file

        net = build_net(path, attention)
        # Shipped as fp16 to halve the download; computed in fp32 (fp16 matmuls are slow on CPU).
        state = {k: v.float() for k, v in load_file(str(path / WEIGHTS_FILE)).items()}
        net.load_state_dict(state)
        net.eval()
        if backend == "int8":
            with _torch_threads(threads):
                net = torch.ao.quantization.quantize_dynamic(net, {nn.Linear}, dtype=torch.qint8)
        return cls(net, tokenizer, meta, backend=backend, threads=threads, batch_size=batch_size)

    # ------------------------------------------------------------ public API

    def support(self, pairs: Sequence[tuple[str, str]]) -> list[dict[str, float]]:
        """p(supports / contradicts / not_found) for each (premise, claim), in input order."""
        probs = self._run(pairs, head=0)
        return [dict(zip(SUPPORT_LABELS, row, strict=True)) for row in probs]

    def answerability(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """p(the passage answers the question) for each (passage, question), in input order."""
        return [row[1] for row in self._run(pairs, head=1)]

    # ------------------------------------------------------------ internals

    def _run(self, pairs: Sequence[tuple[str, str]], head: int) -> list[list[float]]:
        if not pairs:
            return []
        clean = [(str(a or "").strip(), str(b or "").strip()) for a, b in pairs]
        out: list[list[float]] = [[] for _ in clean]
        # Sorting by length before batching keeps padding (and so wasted compute) small.
        order = sorted(range(len(clean)), key=lambda i: len(clean[i][0]) + len(clean[i][1]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            probs = self._forward([clean[i] for i in chunk], head)
            for i, row in zip(chunk, probs, strict=True):
                out[i] = row
        return out

    def _forward(self, pairs: list[tuple[str, str]], head: int) -> list[list[float]]:
        enc = self.tokenizer(
            [a for a, _ in pairs],
            [b for _, b in pairs],
            truncation="longest_first",
            max_length=self.max_length,
            padding=True,
            return_tensors="np" if self.backend == "onnx" else "pt",
        )
        if self.backend == "onnx":
            import numpy as np

            feeds = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
            logits = torch.from_numpy(self.net.run(None, feeds)[head])
        else:
            with _torch_threads(self.threads), torch.inference_mode():
                logits = self.net(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])[head]
        return torch.softmax(logits.float(), dim=-1).tolist()
