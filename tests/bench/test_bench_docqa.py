"""bench_docqa ingests files through the upload service and the worker, asks questions through
the real answer service, and reports right / refused / wrong with the risk labels' fit."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from apps.documents.models import Document
from apps.workspaces.models import Workspace
from bench.management.commands.bench_docqa import auroc, normalised, summary

pytestmark = pytest.mark.django_db(transaction=True)

HARBOUR = (
    "The north pier of Brekkvik harbour is 212 metres long.\n\n"
    "The harbour master reads the tide gauge at six every morning and logs it in the harbour book.\n"
)
QUESTIONS = [
    {"question": "How long is the north pier of Brekkvik harbour?", "answerable": True, "expected_answer": ["212 metres"]},
    {"question": "When does the harbour master read the tide gauge?", "answerable": True, "expected_answer": ["at six every morning"]},
    {"question": "What colour is the lighthouse of Oslo?", "answerable": False, "expected_answer": []},
]


def test_every_question_is_scored_with_its_risk_and_the_files_are_cleaned_up(tmp_path, capsys, celery_worker):
    files = tmp_path / "files"
    files.mkdir()
    (files / "harbour.txt").write_text(HARBOUR)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    call_command("bench_docqa", files=str(files), questions=str(questions))
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["n"], result["n_answerable"], result["n_unanswerable"]) == (3, 2, 1)
    assert sum(result["answerable"].values()) == 2
    assert sum(result["unanswerable"].values()) == 1
    assert result["answerable"]["right"] >= 1, result["per_question"]
    assert [row["question"] for row in result["per_question"]] == [q["question"] for q in QUESTIONS]
    for row in result["per_question"]:
        assert set(row) == {"question", "answerable", "outcome", "risk", "confidence", "ms"}
        assert (row["risk"] is None) == (row["outcome"] == "refused")
    answered = result["right_answers"]["n"] + result["wrong_answers"]["n"]
    assert answered == sum(row["outcome"] != "refused" for row in result["per_question"])
    assert not Workspace.objects.filter(slug__startswith="bench-docqa").exists()
    assert not Document.objects.exists()


def test_an_answer_is_right_when_an_expected_answer_appears_in_it_normalised():
    assert normalised("The span is 1\u2013 2 KM\u00a0long") == "the span is 1- 2 km long"
    assert normalised("ﬁve") == "five"


def test_the_summary_counts_wrong_answers_by_their_risk_and_low_risk_precision():
    rows = [
        {"question": "a", "answerable": True, "outcome": "right", "risk": "low", "confidence": 0.9, "ms": 1},
        {"question": "b", "answerable": True, "outcome": "wrong", "risk": "low", "confidence": 0.8, "ms": 1},
        {"question": "c", "answerable": True, "outcome": "refused", "risk": None, "confidence": None, "ms": 1},
        {"question": "d", "answerable": False, "outcome": "answered", "risk": "high", "confidence": 0.2, "ms": 1},
        {"question": "e", "answerable": False, "outcome": "refused", "risk": None, "confidence": None, "ms": 1},
    ]
    result = summary(rows)
    assert result["answerable"] == {"right": 1, "refused": 1, "wrong": 1}
    assert result["unanswerable"] == {"refused": 1, "answered": 1}
    assert result["wrong_answers"] == {"n": 2, "low": 1, "medium": 0, "high": 1}
    assert result["right_answers"] == {"n": 1, "low": 1, "medium": 0, "high": 0}
    assert result["low_risk_precision"] == 0.5
    assert result["risk_auroc"] == 1.0


def test_auroc_counts_ties_as_half_and_needs_both_kinds():
    assert auroc([0.5], [0.5]) == 0.5
    assert auroc([0.2, 0.9], [0.5]) == 0.5
    assert auroc([0.9], []) is None
