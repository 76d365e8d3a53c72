"""Latency and accuracy of the exported verifier per backend (torch fp32, torch int8, ONNX int8).

    .venv/bin/python -m training.verifier.latency --model /work/verifier-runs/NAME/export-STEP [--threads 2] [--reps 100]

(--model: an export staging folder, which holds every format; models/verifier has only the ONNX.)

One "answer" = answerability of 1 question x 5 context sentences + support of 3 claims, each
against its quote with one sentence either side: the verifier work of one realistic answer. The
accuracy part scores the full held-out SciFact/HealthVer verbatim claims and the SQuAD 2 sample,
so a faster backend is only taken if it keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from apps.pipeline.verifier import DEFAULT_PATH, Verifier
from training.verifier import data as D
from training.verifier.train import auroc


def realistic_answer(claims: list[D.Claim], squad: list[tuple[str, str, int]]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    # Answerability: one SQuAD question against the five sentences of a context around its answer.
    data = json.loads((D.DATA / "squad2/dev.json").read_text())
    para = data["data"][0]["paragraphs"][1]
    spans = D.sentences(para["context"])[:5]
    question = para["qas"][0]["question"]
    answer_pairs = [(para["context"][a:b], question) for a, b in spans]
    # Support: three held-out SciFact claims, quote widened by a sentence on each side.
    support_pairs = []
    for c in [c for c in claims if c.dataset == "scifact" and c.quote_status == "verbatim"][:40]:
        spans = D.sentences(c.source_text)
        hit = next((i for i, (a, b) in enumerate(spans) if c.quote[:40] in c.source_text[a:b]), None)
        if hit is None or hit == 0 or hit + 1 >= len(spans):
            continue
        window = c.source_text[spans[hit - 1][0] : spans[hit + 1][1]]
        support_pairs.append((window, c.claim))
        if len(support_pairs) == 3:
            break
    return answer_pairs, support_pairs


def accuracy(verifier: Verifier, samples: dict[str, list[tuple[str, str, int]]]) -> dict[str, float]:
    out = {}
    for name, rows in samples.items():
        pairs = [(a, b) for a, b, _ in rows]
        p = verifier.answerability(pairs) if name == "squad2" else [d["supports"] for d in verifier.support(pairs)]
        y = [t for _, _, t in rows]
        out[f"{name}_acc"] = round(sum((s >= 0.5) == bool(t) for s, t in zip(p, y, strict=True)) / len(y), 4)
        out[f"{name}_auroc"] = round(auroc(p, y), 4)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=DEFAULT_PATH)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=100)
    p.add_argument("--backends", default="torch,int8,onnx,onnx:model.fp32.onnx")
    p.add_argument("--judges", action="store_true", help="only the product path: the local judge per answer")
    args = p.parse_args()
    if args.judges:
        judges_latency(args.reps)
        return

    claims = D.load_claims()
    samples = {
        "scifact": D.held_out_claims(claims, "scifact", 0, 0),
        "healthver": D.held_out_claims(claims, "healthver", 0, 0),
        "squad2": D.squad_pairs(300, 0),
    }
    answer_pairs, support_pairs = realistic_answer(claims, samples["squad2"])
    rows = []
    for backend in args.backends.split(","):
        started = time.perf_counter()
        kind, _, onnx_file = backend.partition(":")  # "onnx:model.fp32.onnx" picks another ONNX file
        verifier = Verifier.load(args.model, threads=args.threads, backend=kind, **({"onnx_file": onnx_file} if onnx_file else {}))
        load_s = time.perf_counter() - started
        for _ in range(5):  # warm-up: first calls allocate and (ONNX) pick kernels
            verifier.answerability(answer_pairs)
            verifier.support(support_pairs)
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            verifier.answerability(answer_pairs)
            verifier.support(support_pairs)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        row = {
            "backend": backend,
            "threads": args.threads,
            "load_s": round(load_s, 2),
            "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[int(0.95 * len(times)) - 1], 1),
            "max_ms": round(times[-1], 1),
        } | accuracy(verifier, samples)
        print(json.dumps(row), flush=True)
        rows.append(row)
    tokens = Verifier.load(args.model, backend="torch").tokenizer
    lengths = [len(tokens(a, b)["input_ids"]) for a, b in answer_pairs + support_pairs]
    print(json.dumps({"pairs": len(lengths), "tokens_per_pair": lengths}))


def judges_latency(reps: int) -> None:
    """The budget of issues #16 and #43 in one run, for the local judge as the product calls it:
    the gate's answerability over the 5 passages an answer may draw on (each passage's sentence
    nearest the question) + 3 claims judged against their located quotes."""
    from apps.pipeline.verifier_judge import get_verifier_judge

    claims = [c for c in D.load_claims() if D.is_held_out(c) and c.dataset == "scifact" and c.quote_status == "verbatim"]
    requests = []
    for c in claims:
        start = c.source_text.find(c.quote)
        if start >= 0:
            requests.append((c.claim, c.source_text, start, start + len(c.quote)))
    question = "What does the trial find about the treatment?"
    passages = [(r[1], 0, r[1].find(".") + 1) for r in requests[:5]]  # the default rerank_top_n
    for name, judge in (("verifier", get_verifier_judge(str(DEFAULT_PATH), 1)),):
        times = []
        for i in range(reps + 5):
            batch = requests[(3 * i) % (len(requests) - 3) :][:3]
            t0 = time.perf_counter()
            max(judge.answerability(question, *p) for p in passages)
            judge.judge_many(batch)
            if i >= 5:  # the first calls load and warm the models
                times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        row = {"judge": name, "p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[int(0.95 * len(times)) - 1], 1)}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
