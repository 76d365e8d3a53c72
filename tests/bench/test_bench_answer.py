"""bench_answer runs questions through the real answer service and reports what it timed."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.queries.models import QueryRun
from apps.workspaces.models import Workspace

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = [
    {
        "_id": "bees",
        "title": "Honeybee colonies",
        "text": "Worker bees collect nectar and pollen and turn the nectar into honey in the hive.",
    },
    {
        "_id": "bread",
        "title": "Sourdough",
        "text": "A sourdough starter of wild yeast leavens the bread dough before it is baked in the oven.",
    },
    {
        "_id": "moons",
        "title": "Moons of Jupiter",
        "text": "Io, Europa, Ganymede and Callisto are the four large moons of Jupiter, found by Galileo.",
    },
]
QUERIES = [
    {"_id": "q1", "text": "What do worker bees turn nectar into?"},
    {"_id": "q2", "text": "Which four large moons of Jupiter did Galileo find?"},
    {"_id": "q3", "text": "What is the boiling point of tungsten at high pressure?"},
]


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def run(tmp_path, capsys, **options) -> dict:
    corpus, queries = write_jsonl(tmp_path / "corpus.jsonl", CORPUS), write_jsonl(tmp_path / "queries.jsonl", QUERIES)
    call_command("bench_answer", corpus=corpus, queries=queries, **options)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_every_question_is_answered_or_refused_in_each_mode_with_its_stage_times(tmp_path, capsys):
    result = run(tmp_path, capsys)
    assert result["n"] == 3
    assert set(result["modes"]) == {"verified", "naive"}
    for mode, figures in result["modes"].items():
        assert figures["answered"] + figures["refused"] == 3, mode
        assert figures["answered"] >= 2, mode
        assert 0 < figures["p50_ms"] <= figures["p95_ms"], mode
        assert figures["cpu_ms_per_answer"] > 0, mode
        assert {"retrieve", "rerank", "generate", "verify", "score", "record"} <= set(figures["stages"]), mode
    assert result["modes"]["verified"]["refused"] >= 1, "the off-topic question is refused by the gate"
    assert "gate" in result["modes"]["verified"]["stages"]
    assert "gate" not in result["modes"]["naive"]["stages"], "naive mode has no gate"


def test_it_asks_through_the_product_and_cleans_up(tmp_path, capsys):
    before = Workspace.objects.count()
    result = run(tmp_path, capsys, limit=1, modes="naive")
    assert result["n"] == 1
    assert set(result["modes"]) == {"naive"}
    assert Workspace.objects.count() == before, "its temporary workspace is gone"
    assert not QueryRun.objects.exists(), "and with it every run it asked"


def test_bad_arguments_are_refused_with_a_message(tmp_path, capsys):
    with pytest.raises(CommandError, match="--modes"):
        run(tmp_path, capsys, modes="fast")
    with pytest.raises(CommandError, match="does not exist"):
        call_command("bench_answer", corpus=str(tmp_path / "missing.jsonl"), queries=str(tmp_path / "missing.jsonl"))
