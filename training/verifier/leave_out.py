"""The leave-one-dataset-out protocol: train without X, measure on X — and what X buys.

    nice -n 5 .venv/bin/python -m training.verifier.leave_out --out /work/verifier-runs/lodo [--steps 1500]

One run trains on every licence-clean source (``full``), and one run per group leaves that group
out, the NLI budget shared among the others so every run sees as many pairs. Every run is
measured at its end on the same samples: the held-back tenth of each group (``data.TEST_SHARE``,
never trained on by any run), and the SciFact / HealthVer claims held out by document. A group's
row reads:

- **without X, on X**: how the judge does on a kind of text no run of it trained on (the
  generalisation the maintainers' held-out sets ask for), against **full, on X**;
- **what X buys**: the full run's SciFact / HealthVer AUROC minus the run without X.

Finished runs are kept and skipped, so the command can be rerun after a stop. The table is
written to ``<out>/leave_out.json`` and printed as Markdown for the model card.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

# A group is left out whole: CAD-SNLI is SNLI rewritten, FEVER-Symmetric is FEVER rebuilt.
GROUPS = {
    "fever": ("fever_nli", "fever_symmetric"),
    "snli": ("snli", "cad_snli"),
    "mnli_taxinli": ("mnli_taxinli",),
    "conjnli": ("conjnli",),
    "synth_claims": ("synth_claims",),
}
DEV = ("scifact", "healthver")


def run_dir(out: Path, name: str) -> Path:
    return out / name


def last_line(path: Path) -> dict | None:
    curve = path / "curve.jsonl"
    if not curve.exists():
        return None
    lines = [json.loads(line) for line in curve.read_text().splitlines() if line.strip()]
    return lines[-1] if lines and lines[-1]["step"] == lines[-1]["steps"] and lines[-1]["step"] > 0 else None


def command(args: argparse.Namespace, name: str) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "training.verifier.train",
        "--out",
        str(run_dir(args.out, name)),
        "--epochs",
        "1",
        "--nli-pairs",
        str(args.nli_pairs),
        "--answer-pairs",
        str(args.answer_pairs),
        "--synth-claim-pairs",
        str(args.synth_claim_pairs),
        "--max-steps",
        str(args.steps),
        "--eval-every",
        str(10**9),  # measured at step 0 and at the end only
        "--eval-n",
        str(args.eval_n),
        "--checkpoint-minutes",
        "1000",
        "--test-sets",
        *(members[0] for members in GROUPS.values()),
    ]
    for member in GROUPS.get(name, ()):
        cmd += ["--leave-out", member]
    return cmd


def table(results: dict[str, dict]) -> tuple[dict, str]:
    full = results["full"]
    rows, lines = {}, []
    lines.append(
        "| left out | without X, on X (AUROC) | full, on X | SciFact AUROC without X (full − without) | HealthVer AUROC without X (full − without) |"
    )
    lines.append("|---|---|---|---|---|")
    for group, members in GROUPS.items():
        if group not in results:
            continue
        got, key = results[group], f"test_{members[0]}_auroc"
        row = (
            {"without_on_x": got[key], "full_on_x": full[key]}
            | {f"{dev}_without": got[f"{dev}_auroc"] for dev in DEV}
            | {f"{dev}_buys": round(full[f"{dev}_auroc"] - got[f"{dev}_auroc"], 4) for dev in DEV}
        )
        rows[group] = row
        lines.append(
            f"| {group} ({', '.join(members)}) | {row['without_on_x']:.3f} | {row['full_on_x']:.3f} | "
            f"{row['scifact_without']:.3f} ({row['scifact_buys']:+.3f}) | {row['healthver_without']:.3f} ({row['healthver_buys']:+.3f}) |"
        )
    lines.append(f"| none (full run) | | | {full['scifact_auroc']:.3f} | {full['healthver_auroc']:.3f} |")
    return rows, "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--nli-pairs", type=int, default=16000)
    p.add_argument("--answer-pairs", type=int, default=2000)
    p.add_argument("--synth-claim-pairs", type=int, default=6000)
    p.add_argument("--eval-n", type=int, default=500)
    p.add_argument("--only", nargs="*", help="run only these (full and/or group names); the table uses what is finished")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in ("full", *GROUPS):
        done = last_line(run_dir(args.out, name))
        if done is None and (not args.only or name in args.only):
            run_dir(args.out, name).mkdir(parents=True, exist_ok=True)
            with open(run_dir(args.out, name) / "train.log", "a") as log:
                subprocess.run(command(args, name), stdout=log, stderr=subprocess.STDOUT, check=True)
            done = last_line(run_dir(args.out, name))
        if done is not None:
            results[name] = done
    if "full" not in results:
        sys.exit("the full run has not finished: no table")
    rows, markdown = table(results)
    (args.out / "leave_out.json").write_text(
        json.dumps({"args": vars(args) | {"out": str(args.out)}, "runs": results, "rows": rows}, indent=1)
    )
    print(markdown)


if __name__ == "__main__":
    main()
