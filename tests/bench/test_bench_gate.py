"""bench_gate: SQuAD 2.0 answerable and unanswerable questions through the real pipeline."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from apps.evals.sweep import ANSWERABLE, IN_DOMAIN, OFF_TOPIC, Outcome, contains_gold, metrics, recommend, sweep, transfer
from apps.workspaces.models import Workspace


def outcome(kind, answered, score, correct=False, naive=True):
    return Outcome(kind, answered, score, correct, naive, correct)


def test_metrics_and_sweep_are_counted_by_hand():
    outcomes = [
        outcome(ANSWERABLE, True, 0.8, correct=True),
        outcome(ANSWERABLE, True, 0.5, correct=False),
        outcome(IN_DOMAIN, True, 0.6),
        outcome(IN_DOMAIN, False, None),
        outcome(OFF_TOPIC, True, 0.4),
        outcome(OFF_TOPIC, False, None),
    ]
    at = metrics(outcomes, threshold=0.55)
    assert at["answer_rate"] == 0.5
    assert at["correct_rate"] == 0.5
    assert at["in_domain"]["refusal_rate"] == 0.5
    assert at["off_topic"]["refusal_rate"] == 1.0
    assert at["refusal_precision"] == 0.75  # 3 of the 4 refused are unanswerable
    assert at["hallucination_rate"] == 0.25
    assert metrics(outcomes, threshold=None)["hallucination_rate"] == 1.0
    rows = {r["threshold"]: r for r in sweep(outcomes, [0.0, 0.55, 0.9])}
    assert rows[0.0]["answer_rate"] == 1.0
    assert rows[0.9]["answer_rate"] == 0.0
    # at 0.55: precision 3/4, recall 3/4
    assert rows[0.55]["f1"] == 0.75
    assert recommend(list(rows.values()), min_answer_rate=0.5) == 0.55


def test_the_threshold_recommended_on_one_article_is_applied_to_the_other():
    # Article A separates at 0.5; article B's answerable scores sit lower, at 0.3-0.4.
    a = [outcome(ANSWERABLE, True, 0.7), outcome(ANSWERABLE, True, 0.6), outcome(IN_DOMAIN, True, 0.4), outcome(OFF_TOPIC, True, 0.1)]
    b = [outcome(ANSWERABLE, True, 0.4), outcome(ANSWERABLE, True, 0.3), outcome(IN_DOMAIN, True, 0.2), outcome(OFF_TOPIC, True, 0.05)]
    thresholds = [round(0.1 * i, 1) for i in range(8)]
    assert recommend(sweep(a, thresholds)) == 0.5
    assert recommend(sweep(b, thresholds)) == 0.3
    rows = {(r["tuned_on"], r["applied_to"]): r for r in transfer({"A": a, "B": b}, thresholds)}
    assert set(rows) == {("A", "B"), ("B", "A")}
    assert rows["A", "B"]["threshold"] == 0.5
    assert rows["A", "B"]["answer_rate"] == 0.0  # A's threshold refuses every answerable question of B
    assert rows["A", "B"]["in_domain_refusal_rate"] == 1.0
    assert rows["B", "A"]["threshold"] == 0.3
    assert rows["B", "A"]["answer_rate"] == 1.0
    assert rows["B", "A"]["in_domain_refusal_rate"] == 0.0  # B's lower threshold lets A's distractor through
    assert rows["B", "A"]["off_topic_refusal_rate"] == 1.0


def test_gold_answers_are_found_after_squad_normalisation():
    assert contains_gold("It was in the 10th and 11th centuries.", ["10th and 11th centuries"])
    assert contains_gold("The Normans came from NORMANDY!", ["normandy"])
    assert not contains_gold("In France.", ["Denmark"])


@pytest.mark.django_db(transaction=True)
def test_bench_gate_runs_squad_questions_in_their_own_workspaces(tmp_path):
    squad = {
        "data": [
            {
                "title": "Bakery",
                "paragraphs": [
                    {
                        "context": "The Rye Street bakery opens at six in the morning. Its owner is Mara Lind.",
                        "qas": [
                            {
                                "question": "When does the Rye Street bakery open?",
                                "is_impossible": False,
                                "answers": [{"text": "six in the morning"}],
                            },
                            {"question": "When does the Rye Street bakery close?", "is_impossible": True, "answers": []},
                        ],
                    }
                ],
            },
            {
                "title": "Moons",
                "paragraphs": [
                    {
                        "context": "Triton is the largest moon of Neptune. It orbits in the direction opposite to Neptune's rotation.",
                        "qas": [{"question": "Which planet does Triton orbit?", "is_impossible": False, "answers": [{"text": "Neptune"}]}],
                    }
                ],
            },
        ]
    }
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(squad))
    out = StringIO()
    call_command("bench_gate", squad=str(path), off_topic=1, stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert (result["n_answerable"], result["n_in_domain"], result["n_off_topic"]) == (2, 1, 2)
    assert result["threshold"] == 0.25
    assert result["verified"]["answer_rate"] == 1.0
    assert result["verified"]["correct_rate"] == 1.0
    assert result["verified"]["off_topic"]["refusal_rate"] == 1.0
    assert set(result["naive"]) == set(result["verified"])
    assert [r["threshold"] for r in result["sweep"]][:3] == [0.0, 0.01, 0.02]
    assert 0 <= result["recommended_threshold"] <= 0.8
    assert {(r["tuned_on"], r["applied_to"]) for r in result["transfer"]} == {("Bakery", "Moons"), ("Moons", "Bakery")}
    assert not Workspace.objects.filter(slug__startswith="bench-gate").exists()
