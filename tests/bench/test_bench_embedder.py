"""bench_embedder embeds a BEIR corpus with each backend of the product's Embedder, ranks the
judged records by cosine and reports speed, nDCG@10 and how close each backend's vectors come to
the first one's."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

CORPUS = [
    {"_id": "bees", "title": "Honeybee colonies", "text": "Worker bees collect nectar and pollen and make honey in the hive."},
    {"_id": "bread", "title": "Sourdough", "text": "A sourdough starter of wild yeast leavens the bread dough before baking."},
    {"_id": "moons", "title": "Moons of Jupiter", "text": "Io, Europa, Ganymede and Callisto are the four large moons of Jupiter."},
]
QUERIES = [{"_id": "q1", "text": "How do bees make honey?"}, {"_id": "q2", "text": "Which moons does Jupiter have?"}]


@pytest.fixture
def beir(tmp_path):
    corpus, queries, qrels = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl", tmp_path / "qrels.tsv"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    queries.write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\tbees\t1\nq2\tmoons\t1\n")
    return {"corpus": str(corpus), "queries": str(queries), "qrels": str(qrels)}


def test_each_backend_is_timed_and_ranked_against_the_first(beir, settings, tmp_path, capsys):
    settings.VAR_DIR = tmp_path
    call_command("bench_embedder", **beir, backends="torch,onnx-int8", threads=1)
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["records"], result["queries"], list(result["backends"])) == (3, 2, ["torch", "onnx-int8"])
    torch, int8 = result["backends"]["torch"], result["backends"]["onnx-int8"]
    assert torch["ndcg_at_10"] == 1.0, "each question's record ranks first"
    assert int8["ndcg_at_10"] == 1.0
    assert torch["cosine_to_first"] == {"min": 1.0, "mean": 1.0}
    assert 0.98 <= int8["cosine_to_first"]["min"] < 1.0
    assert (tmp_path / "models" / "embedder").is_dir(), "exported under the var folder"


def test_an_unknown_backend_is_refused(beir):
    with pytest.raises(CommandError, match="--backends takes torch, onnx, onnx-int8"):
        call_command("bench_embedder", **beir, backends="torch,tensorrt")
