"""calibrate_judges: each local judge fitted on half the claims (by document), measured on the rest."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.pipeline.judging.selective import Calibration
from bench.management.commands import calibrate_judges


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
    call_command("calibrate_judges", judge=["features"], write=True, stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    report = result["judges"]["features"]
    calibrating = sum(calibrate_judges.calibrating(f"{n}{i}") for n in ("scifact", "healthver") for i in range(12))
    assert report["calibration_claims"] == 2 * calibrating
    held = report["scifact"]["held_out_claims"] + report["healthver"]["held_out_claims"]
    assert held == 2 * (24 - calibrating)
    for name in ("scifact", "healthver"):
        assert set(report[name]) >= {"auroc", "ece", "selective", "reliability"}
    fitted = json.loads(stored.read_text())["judges"]["local"]
    calibration = Calibration.from_json(fitted["calibration"])
    assert sum(calibration.faithful) + sum(calibration.unfaithful) == report["calibration_claims"]


def test_a_target_precision_out_of_range_is_refused_with_a_clear_message():
    for bad in (0.3, 1.0, 1.5):
        with pytest.raises(CommandError, match=r"--target is a precision from 0\.5"):
            call_command("calibrate_judges", target=bad, stdout=StringIO(), stderr=StringIO())
