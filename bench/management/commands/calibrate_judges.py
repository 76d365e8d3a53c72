"""Fit the local judge's p(supports) on a calibration split, and say how it holds on the rest.

The claims of SciFact and HealthVer (the development claim sets beside the repository) are split
by their source document: documents whose id hashes even calibrate, the others are held out, so no
document's claims sit on both sides (the verifier never trains on either). The judge grades every
claim as the product does (`verify_answer`); its p(supports) is fitted to faithfulness on the calibration half (isotonic,
`apps.pipeline.judging.selective`), and the held-out half of each set reports AUROC, ECE, a
reliability table and the verified / flagged / unsure outcomes at the default target precision.
`--write` stores the fits in `apps/pipeline/data/judge_calibration.json` (fitted on the
calibration half only, so the held-out figures stay held out).
"""

from __future__ import annotations

import hashlib
import json
import time

from django.core.management.base import BaseCommand, CommandError

from apps.pipeline.judging.selective import CALIBRATION_PATH, DEFAULT_TARGET_PRECISION, fit, judge_score, outcome
from bench.calibration import reliability
from bench.common import data_path, emit, progress
from bench.management.commands.bench_verify import LOCATOR_THRESHOLD, grading_judge, read_claims, read_corpus, verify_all
from bench.verify import judge_probabilities, risk_coverage, selective_metrics

SETS = {
    "scifact": (("scifact", "claims_corpus.jsonl.gz"), ("scifact", "claims_train.jsonl")),
    "healthver": (("healthver", "corpus.jsonl"), ("healthver", "claims.jsonl")),
}
BANDS = tuple(i / 10 for i in range(11))


def calibrating(source_id: str) -> bool:
    """Whether a source document's claims fall in the calibration half (a stable hash of its id)."""
    return hashlib.sha256(source_id.encode()).digest()[0] % 2 == 0


class Command(BaseCommand):
    help = "Fit each local judge's calibrated p(supports) on half of the development claims (by document); report the other half."

    def add_arguments(self, parser):
        parser.add_argument("--target", type=float, default=DEFAULT_TARGET_PRECISION)
        parser.add_argument("--write", action="store_true", help=f"store the fits in {CALIBRATION_PATH.name}")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, target: float, write: bool, json_path: str | None, **options):
        if not 0.5 <= target < 1:
            raise CommandError(f"--target is a precision from 0.5 up to (not including) 1; got {target}.")
        started = time.perf_counter()
        sets = {name: self._load(*paths) for name, paths in SETS.items()}
        result, stored = {"target_precision": target, "judges": {}}, {}
        local = grading_judge("local")
        graded = {set_name: self._grade(local, golds, documents) for set_name, (golds, documents) in sets.items()}
        scores, labels = [], []
        for golds, predicted in graded.values():
            for gold, claim in zip(golds, predicted, strict=True):
                if calibrating(gold.source_id) and claim.location.status == "located":
                    scores.append(judge_score(claim.verdict, claim.judge_score or 0.0))
                    labels.append(gold.faithful)
        if not scores:
            raise CommandError("No claim of the calibration half has a located quote: nothing to fit.")
        calibration = fit(scores, labels)
        thresholds = calibration.thresholds(target)
        report = {"calibration_claims": len(scores), "verify_threshold": thresholds.verify, "flag_threshold": thresholds.flag}
        for set_name, (golds, predicted) in graded.items():
            held = [(g, c) for g, c in zip(golds, predicted, strict=True) if not calibrating(g.source_id)]
            held_golds, held_claims = [g for g, _ in held], [c for _, c in held]
            p = judge_probabilities(held_claims, calibration)
            outcomes = [outcome(q, thresholds) for q in p]
            report[set_name] = {"held_out_claims": len(held)} | selective_metrics(held_golds, p, outcomes)
            located = [(judge_score(c.verdict, c.judge_score or 0.0), g.faithful) for g, c in held if c.location.status == "located"]
            report[set_name]["risk_coverage"] = risk_coverage([s for s, _ in located], [f for _, f in located])
            report[set_name]["reliability"] = reliability([q or 0.0 for q in p], [g.faithful for g in held_golds], BANDS)
        result["judges"][local.name] = report
        stored[local.name] = {
            "calibration": calibration.to_json(),
            "fitted_on": "the even-hashed source documents of SciFact claims_train and HealthVer claims (calibrate_judges)",
            "claims": len(scores),
        }
        if write:
            CALIBRATION_PATH.write_text(json.dumps({"judges": stored}, indent=1) + "\n", encoding="utf-8")
            progress(f"wrote {CALIBRATION_PATH}")
        result["seconds"] = round(time.perf_counter() - started, 1)
        emit(result, json_path, self.stdout)

    @staticmethod
    def _load(corpus_parts, claims_parts):
        golds = read_claims(data_path(*claims_parts))
        return golds, read_corpus(data_path(*corpus_parts), {g.source_id for g in golds})

    @staticmethod
    def _grade(local, golds, documents):
        progress(f"judge {local.name}: {len(golds)} claims")
        return golds, verify_all(golds, documents, local, LOCATOR_THRESHOLD)
