"""bench_answering asks SQuAD-format questions through the real answer service, one temporary
workspace per article, fits p(right) leaving each article out, and writes the calibration the
product loads; bench/calibration.py's Platt fit and reliability table underneath it."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from apps.documents.models import Document
from apps.pipeline.answering import Calibration
from apps.workspaces.models import Workspace
from bench.calibration import expected_calibration_error, platt, reliability, sigmoid

pytestmark = pytest.mark.django_db(transaction=True)


def article(title: str, context: str, qas: list[tuple[str, str | None]]) -> dict:
    return {
        "title": title,
        "paragraphs": [
            {
                "context": context,
                "qas": [
                    {
                        "question": q,
                        "is_impossible": a is None,
                        "answers": [] if a is None else [{"text": a, "answer_start": context.index(a)}],
                    }
                    for q, a in qas
                ],
            }
        ],
    }


SQUAD = {
    "version": "v2.0",
    "data": [
        article(
            "Harbour",
            "The north pier of Brekkvik harbour is 212 metres long. The harbour master reads the tide gauge at six every morning.",
            [
                ("How long is the north pier of Brekkvik harbour?", "212 metres"),
                ("When is the tide gauge read?", "at six every morning"),
                ("How deep is the harbour of Tromso?", None),
            ],
        ),
        article(
            "Bridge",
            "The Halvorsen bridge is 412 metres long. It was built in 1932 by the engineer Ingrid Halvorsen.",
            [
                ("How long is the Halvorsen bridge?", "412 metres"),
                ("Who built the Halvorsen bridge?", "Ingrid Halvorsen"),
                ("What colour is the Halvorsen bridge?", None),
            ],
        ),
    ],
}


def test_the_fit_is_measured_leaving_each_article_out_and_written_for_the_product(tmp_path, capsys):
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps(SQUAD))
    written = tmp_path / "answering.json"
    call_command("bench_answering", squad=squad, files=tmp_path / "none", write=written)
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    held_out = result["squad_leave_one_article_out"]
    assert held_out["answers"] + held_out["refused"] == 6
    assert held_out["right"] + held_out["wrong"] == held_out["answers"]
    assert sum(band["n"] for band in held_out["reliability"]) == held_out["answers"]
    assert set(held_out["low_risk"]) == {"n", "precision", "wrong_labelled_low"}
    assert "docqa_held_out" not in result, "no documents given: no held-out check"
    fitted = json.loads(written.read_text())["scorers"][result["scorer"]]
    assert (fitted["slope"], fitted["intercept"]) == (result["fit"]["slope"], result["fit"]["intercept"])
    assert Calibration.load(result["scorer"], written) is not None
    assert not Workspace.objects.filter(slug__startswith="bench-answering").exists()
    assert not Document.objects.exists()


def test_platt_scaling_recovers_a_known_slope_and_its_reliability_holds():
    scores = [i / 100 for i in range(100)] * 20
    labels = [((i * 7919) % 100) / 100 < sigmoid(6 * s - 3) for i, s in enumerate(scores)]
    slope, intercept = platt(scores, labels)
    assert slope == pytest.approx(6, abs=1.5)
    assert intercept == pytest.approx(-3, abs=0.8)
    predicted = [sigmoid(slope * s + intercept) for s in scores]
    assert expected_calibration_error(predicted, labels) < 0.05
    bands = reliability(predicted, labels)
    assert sum(b["n"] for b in bands) == len(scores)
    assert all(abs(b["mean_predicted"] - b["share_right"]) < 0.1 for b in bands if b["n"] > 100)


def test_answers_all_right_give_a_flat_fit_at_their_smoothed_share():
    slope, intercept = platt([0.1, 0.5, 0.9], [True, True, True])
    assert abs(slope) < 0.1
    assert sigmoid(intercept) == pytest.approx(4 / 5, abs=0.02)
    with pytest.raises(ValueError, match="needs examples"):
        platt([], [])
