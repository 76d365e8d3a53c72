"""bench_pooling cuts each corpus as ingestion does, embeds the units and the chunks in two passes
and ranks documents with the chunks' own vectors and with vectors pooled from their units."""

from __future__ import annotations

import gzip
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

BEES = " ".join(
    f"Worker bees of the hive collect nectar and pollen from flower number {n} and turn the nectar into honey." for n in range(12)
)
SCIFACT = [
    {"_id": "bees", "title": "Honeybee colonies", "text": BEES},
    {"_id": "bread", "title": "Sourdough", "text": "A sourdough starter of wild yeast leavens the bread dough before baking."},
    {"_id": "moons", "title": "Moons of Jupiter", "text": "Io, Europa, Ganymede and Callisto are the four large moons of Jupiter."},
]
HEALTHVER = [
    {"id": "hv0", "title": "Masks", "text": "Face masks reduce the spread of respiratory droplets between people."},
    {"id": "hv1", "title": "Vitamin D", "text": "Vitamin D supplements do not prevent infection with the coronavirus."},
]
CLAIMS = [
    {"source_id": "hv0", "claim": "Masks stop droplets from spreading", "label": "supports"},
    {"source_id": "hv1", "claim": "Vitamin D prevents coronavirus infection", "label": "contradicts"},
    {"source_id": "hv1", "claim": "Vitamin D cures the flu", "label": "not_found"},
]
FIQA = [
    {"query": "Should I pay off my mortgage early?", "positive": ["Paying off a mortgage early saves the interest on the loan."]},
    {"query": "What is an index fund?", "positive": ["An index fund holds every stock of a market index at low cost."]},
]


def _lines(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def data(tmp_path):
    (tmp_path / "scifact" / "qrels").mkdir(parents=True)
    (tmp_path / "scifact" / "corpus.jsonl.gz").write_bytes(gzip.compress(_lines(SCIFACT).encode()))
    (tmp_path / "scifact" / "queries.jsonl").write_text(
        _lines([{"_id": "q1", "text": "How do bees make honey?"}, {"_id": "q2", "text": "Which moons does Jupiter have?"}])
    )
    (tmp_path / "scifact" / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tbees\t1\nq2\tmoons\t1\n")
    (tmp_path / "healthver").mkdir()
    (tmp_path / "healthver" / "corpus.jsonl").write_text(_lines(HEALTHVER))
    (tmp_path / "healthver" / "claims.jsonl").write_text(_lines(CLAIMS))
    (tmp_path / "train" / "fiqa_rerank").mkdir(parents=True)
    (tmp_path / "train" / "fiqa_rerank" / "fiqa_test_positives.jsonl").write_text(_lines(FIQA))
    return str(tmp_path)


def _run(capsys, **options) -> dict:
    call_command("bench_pooling", threads=1, **options)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])["corpora"]


def test_each_corpus_is_ranked_with_own_and_pooled_chunk_vectors(data, capsys):
    corpora = _run(capsys, data=data)
    assert list(corpora) == ["scifact", "healthver", "fiqa842"]
    assert corpora["healthver"]["queries"] == 2, "a claim its passage neither supports nor contradicts asks for nothing"
    for name, result in corpora.items():
        assert list(result["variants"]) == ["a_own", "b_mean", "c_token_mean", "f_best_unit"], name
        own = result["variants"]["a_own"]
        assert own["ndcg_at_10"] == 1.0, f"{name}: each question's record ranks first"
        assert own["ndcg_at_10_vs_a"] == {"mean": 0.0, "low": 0.0, "high": 0.0}
    scifact = corpora["scifact"]
    assert scifact["chunks"] > scifact["docs"], "the long record is cut in several chunks"
    assert scifact["tokens"]["chunk_pass"] > 0, "chunks of several sentences are embedded whole too"


def test_a_chunk_of_one_sentence_needs_no_second_pass(data, capsys):
    fiqa = _run(capsys, data=data, corpora="fiqa842")["fiqa842"]
    assert fiqa["chunks_of_one_unit"] == fiqa["chunks"] == 2
    assert fiqa["tokens"]["chunk_pass"] == 0
    assert {v["ndcg_at_10_vs_a"]["mean"] for v in fiqa["variants"].values()} == {0.0}, "pooling one unit gives its vector back"


def test_limit_keeps_the_queries_of_the_first_records(data, capsys):
    scifact = _run(capsys, data=data, corpora="scifact", limit=2)["scifact"]
    assert (scifact["docs"], scifact["queries"]) == (2, 1)


def test_an_unknown_corpus_or_missing_data_is_refused(data, tmp_path):
    with pytest.raises(CommandError, match="--corpora takes scifact, healthver, fiqa842"):
        call_command("bench_pooling", corpora="scifact,msmarco")
    with pytest.raises(CommandError, match="Cannot read scifact"):
        call_command("bench_pooling", corpora="scifact", data=str(tmp_path / "nowhere"))
