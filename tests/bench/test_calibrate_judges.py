"""calibrate_judges: the local judge fitted on half the claims (by document), measured on the rest."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.pipeline.judging.selective import Calibration
from bench.management.commands import calibrate_judges
from bench.verify import COVERAGE_SHARES, risk_coverage


def write_set(root, name: str, documents: int = 12) -> None:
    folder = root / name
    folder.mkdir()
    corpus, claims = [], []
    for i in range(documents):
        sentence = f"The drug lowered blood pressure by {i + 5} points in trial {i}."
        corpus.append({"id": f"{name}{i}", "title": f"Trial {i}", "text": f"Trial {i} enrolled {100 + i} adults. {sentence}"})
        claims.append({"id": f"{name}{i}a", "source_id": f"{name}{i}", "claim": sentence, "quote": sentence, "label": "supports"})
        wrong = sentence.replace(f"by {i + 5} points", f"by {i + 50} points")
        claims.append({"id": f"{name}{i}b", "source_id": f"{name}{i}", "claim": wrong, "quote": sentence, "label": "contradicts"})
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    rows = [c | {"quote_status": "verbatim", "faithful": c["label"] == "supports"} for c in claims]
    (folder / "claims.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_each_judge_is_fitted_on_one_half_of_the_documents_and_measured_on_the_other(tmp_path, monkeypatch):
    for name in ("scifact", "healthver"):
        write_set(tmp_path, name)
    sets = {
        "scifact": (("scifact", "corpus.jsonl"), ("scifact", "claims.jsonl")),
        "healthver": (("healthver", "corpus.jsonl"), ("healthver", "claims.jsonl")),
    }
    monkeypatch.setattr(calibrate_judges, "SETS", sets)
    monkeypatch.setattr(calibrate_judges, "data_path", lambda *parts: tmp_path.joinpath(*parts))
    stored = tmp_path / "judge_calibration.json"
    monkeypatch.setattr(calibrate_judges, "CALIBRATION_PATH", stored)
    halves = {calibrate_judges.calibrating(f"{name}{i}") for name in ("scifact", "healthver") for i in range(12)}
    assert halves == {True, False}, "the fixture's documents fall on both sides of the split"

    out = StringIO()
    call_command("calibrate_judges", write=True, stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    report = result["judges"]["verifier"]
    calibrating = sum(calibrate_judges.calibrating(f"{n}{i}") for n in ("scifact", "healthver") for i in range(12))
    assert report["calibration_claims"] == 2 * calibrating
    held = report["scifact"]["held_out_claims"] + report["healthver"]["held_out_claims"]
    assert held == 2 * (24 - calibrating)
    for name in ("scifact", "healthver"):
        assert set(report[name]) >= {"auroc", "ece", "selective", "reliability", "risk_coverage"}
        curve = report[name]["risk_coverage"]
        assert [point["verified_share"] for point in curve] == list(COVERAGE_SHARES)
        assert all(0.0 <= point["verified_precision"] <= 1.0 for point in curve)
    fitted = json.loads(stored.read_text())["judges"]["verifier"]
    calibration = Calibration.from_json(fitted["calibration"])
    assert sum(calibration.faithful) + sum(calibration.unfaithful) == report["calibration_claims"]


def test_a_target_precision_out_of_range_is_refused_with_a_clear_message():
    for bad in (0.3, 1.0, 1.5):
        with pytest.raises(CommandError, match=r"--target is a precision from 0\.5"):
            call_command("calibrate_judges", target=bad, stdout=StringIO(), stderr=StringIO())


def test_the_risk_coverage_curve_verifies_the_highest_scored_claims_first():
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05]
    faithful = [True, True, False, True, False, False, True, False, False, False]
    curve = {point["verified_share"]: point for point in risk_coverage(scores, faithful, (0.2, 0.5, 1.0))}
    assert curve[0.2] == {"verified_share": 0.2, "claims": 2, "verified_precision": 1.0}
    assert curve[0.5]["verified_precision"] == 0.6
    assert curve[1.0]["verified_precision"] == 0.4
