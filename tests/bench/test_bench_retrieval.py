from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.workspaces.models import Workspace
from bench.management.commands.bench_retrieval import mrr_at_k, ndcg_at_k, rank_documents, recall_at_k

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = [
    {
        "_id": "volcano",
        "title": "Volcanic eruptions",
        "text": "Magma rises through the crust and erupts as lava, ash and volcanic gas from a volcano's crater.",
    },
    {
        "_id": "bees",
        "title": "Honeybee colonies",
        "text": "Worker bees collect nectar and pollen from flowers and turn the nectar into honey inside the hive.",
    },
    {
        "_id": "chess",
        "title": "Chess openings",
        "text": "The Sicilian Defence answers the king's pawn opening; grandmasters study chess openings for years.",
    },
    {
        "_id": "bread",
        "title": "Sourdough baking",
        "text": "A sourdough starter of wild yeast and lactic bacteria leavens the bread dough before it is baked in the oven.",
    },
    {
        "_id": "jupiter",
        "title": "Moons of Jupiter",
        "text": "Io, Europa, Ganymede and Callisto are the four large moons of the planet Jupiter, found by Galileo.",
    },
    {
        "_id": "tides",
        "title": "Ocean tides",
        "text": "The gravity of the Moon and the Sun pulls on the oceans and raises the high and low tides on the coast.",
    },
]
QUERIES = [
    {"_id": "q1", "text": "How do volcanoes erupt lava?"},
    {"_id": "q2", "text": "How do bees make honey from nectar?"},
    {"_id": "q3", "text": "Which chess opening is the Sicilian Defence?"},
    {"_id": "q4", "text": "How is sourdough bread leavened with a starter?"},
    {"_id": "q5", "text": "What are the large moons of Jupiter?"},
    {"_id": "q6", "text": "What causes ocean tides?"},
    {"_id": "q7", "text": "A query with only a non-relevant judgment"},
    {"_id": "q8", "text": "A query with no judgment at all"},
]
QRELS = [
    ("q1", "volcano", 1),
    ("q2", "bees", 2),
    ("q3", "chess", 1),
    ("q4", "bread", 1),
    ("q5", "jupiter", 1),
    ("q6", "tides", 1),
    ("q7", "chess", 0),
]


def _write_beir(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in QRELS))
    return corpus, queries, qrels


def test_bench_retrieval_ingests_a_tiny_corpus_and_finds_the_right_document_first(tmp_path, capsys):
    corpus, queries, qrels = _write_beir(tmp_path)
    json_path = tmp_path / "result.json"

    call_command(
        "bench_retrieval",
        "--corpus",
        str(corpus),
        "--queries",
        str(queries),
        "--qrels",
        str(qrels),
        "--chunk-size",
        "400",
        "--chunk-overlap",
        "60",
        "--json",
        str(json_path),
    )

    captured = capsys.readouterr()
    result = json.loads(captured.out.strip().splitlines()[-1])
    assert json.loads(json_path.read_text()) == result
    assert set(result) == {"n_docs", "n_queries", "ingest_seconds", "modes", "chunk_size", "chunk_overlap", "n_chunks", "embed_p50_ms"}
    assert result["n_docs"] == 6
    assert result["n_queries"] == 6  # q7 has no relevant judgment, q8 none at all
    assert (result["chunk_size"], result["chunk_overlap"]) == (400, 60)
    assert result["n_chunks"] == 6  # every abstract fits in one 400-character chunk
    assert result["ingest_seconds"] > 0
    assert result["embed_p50_ms"] > 0
    assert set(result["modes"]) == {"dense", "keyword", "hybrid", "reranked"}
    for metrics in result["modes"].values():
        assert set(metrics) == {"ndcg@10", "recall@100", "mrr@10", "p50_ms", "p95_ms"}
        for key in ("ndcg@10", "recall@100", "mrr@10"):
            assert 0.0 <= metrics[key] <= 1.0
        assert 0 < metrics["p50_ms"] <= metrics["p95_ms"]
    assert result["modes"]["hybrid"]["mrr@10"] == 1.0
    assert result["modes"]["dense"]["mrr@10"] == 1.0
    assert result["modes"]["hybrid"]["ndcg@10"] == 1.0
    assert result["modes"]["hybrid"]["recall@100"] == 1.0
    assert result["modes"]["reranked"]["mrr@10"] == 1.0
    assert "ingest 6/6 docs" in captured.err
    assert not Workspace.objects.filter(slug__startswith="bench-retrieval").exists()


def test_bench_retrieval_refuses_an_unknown_mode_before_doing_any_work(tmp_path):
    corpus, queries, qrels = _write_beir(tmp_path)
    with pytest.raises(CommandError, match="Unknown mode"):
        call_command(
            "bench_retrieval", "--corpus", str(corpus), "--queries", str(queries), "--qrels", str(qrels), "--modes", "hybrid,psychic"
        )
    assert not Workspace.objects.filter(slug__startswith="bench-retrieval").exists()


def test_metric_functions_match_a_ranking_scored_by_hand():
    judgments = {"a": 2, "b": 1, "c": 1, "z": 0}
    relevant = {"a", "b", "c"}
    ranking = ["x", "a", "c", "y", "z"]
    # DCG@10 = 2/log2(3) + 1/log2(4); the ideal order a, b, c gives 2/log2(2) + 1/log2(3) + 1/log2(4).
    expected = (2 / math.log2(3) + 1 / 2) / (2 + 1 / math.log2(3) + 1 / 2)
    assert ndcg_at_k(ranking, judgments, 10) == pytest.approx(expected)
    assert expected == pytest.approx(0.56273, abs=1e-5)
    assert ndcg_at_k(["a", "b", "c"], judgments, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y"], judgments, 10) == 0.0
    assert ndcg_at_k(["x"] * 10 + ["a"], judgments, 10) == 0.0  # past the cut-off
    assert recall_at_k(ranking, relevant, 100) == pytest.approx(2 / 3)
    assert recall_at_k(ranking, relevant, 2) == pytest.approx(1 / 3)
    assert mrr_at_k(ranking, relevant, 10) == 0.5
    assert mrr_at_k(["x", "y"], relevant, 10) == 0.0


def test_documents_are_ranked_by_their_best_chunk_and_duplicates_stand_for_every_corpus_id():
    chunks = [SimpleNamespace(document_id=d) for d in ("D2", "D1", "D2", "D3", "D1")]
    corpus_ids_of = {"D1": ["a"], "D2": ["b", "b-copy"], "D3": ["c"]}
    assert rank_documents(chunks, corpus_ids_of) == ["b", "b-copy", "a", "c"]
