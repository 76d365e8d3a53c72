from __future__ import annotations

import json
import signal
import subprocess
import sys

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.documents.models import Chunk, Document, IndexStat, TermStat
from apps.pipeline.text import sentence_spans
from apps.workspaces.models import Workspace
from bench.common import read_jsonl
from bench.management.commands.bench_scale import _default_data_dir
from bench.scale import build_corpus, document_text
from tests.conftest import ROOT, worker_env

pytestmark = pytest.mark.django_db(transaction=True)

KEYS = {
    "chunks",
    "workspaces",
    "queries",
    "vectors",
    "hybrid_p50_ms",
    "hybrid_p95_ms",
    "hnsw_recall@10",
    "baseline_p50_ms",
    "baseline_p95_ms",
    "speedup_p50",
    "index_build_seconds",
    "write_seconds",
}


def _nothing_left() -> None:
    assert not Workspace.objects.filter(slug__startswith="bench-scale").exists()
    assert not Document.objects.exists()
    assert not Chunk.objects.exists()
    assert not TermStat.objects.exists()
    assert not IndexStat.objects.exists()


def test_bench_scale_times_both_designs_on_the_asked_number_of_chunks_and_removes_its_workspaces(tmp_path, capsys):
    json_path = tmp_path / "scale.json"

    call_command("bench_scale", "--chunks", "2000", "--workspaces", "3", "--queries", "20", "--json", str(json_path))

    captured = capsys.readouterr()
    result = json.loads(captured.out.strip().splitlines()[-1])
    assert json.loads(json_path.read_text()) == result
    assert set(result) == KEYS
    assert (result["chunks"], result["workspaces"], result["queries"]) == (2000, 3, 20)
    vectors = result["vectors"]
    assert set(vectors) == {"real", "derived", "method"}
    assert vectors["real"] + vectors["derived"] == 2000
    assert vectors["real"] >= 50
    assert vectors["derived"] > 0
    assert "all-MiniLM-L6-v2" in vectors["method"]
    assert 0.9 <= result["hnsw_recall@10"] <= 1.0  # a few hundred chunks per workspace: HNSW misses almost nothing
    assert 0 < result["hybrid_p50_ms"] <= result["hybrid_p95_ms"]
    assert 0 < result["baseline_p50_ms"] <= result["baseline_p95_ms"]
    # The ratio is printed to two decimals: below 1 (a busy machine, 2,000 chunks) that alone is
    # more than 1 % of it.
    assert result["speedup_p50"] == pytest.approx(result["baseline_p50_ms"] / result["hybrid_p50_ms"], rel=0.01, abs=0.006)
    assert result["write_seconds"] > result["index_build_seconds"] > 0
    assert "wrote" in captured.err
    assert "queries 20/20" in captured.err
    _nothing_left()


def test_bench_scale_names_the_bench_requirements_when_the_baseline_libraries_are_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)  # makes `import faiss` fail
    with pytest.raises(CommandError, match=r"faiss-cpu.*bench/requirements\.txt"):
        call_command("bench_scale", "--chunks", "100", "--workspaces", "2", "--queries", "5")
    assert not Workspace.objects.filter(slug__startswith="bench-scale").exists()


def test_bench_scale_refuses_fewer_chunks_than_workspaces():
    with pytest.raises(CommandError, match="one chunk per workspace"):
        call_command("bench_scale", "--chunks", "2", "--workspaces", "3", "--queries", "5")


def test_bench_scale_stopped_with_sigterm_still_removes_every_workspace(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in list(read_jsonl(_default_data_dir() / "corpus.jsonl.gz"))[:100]))
    command = [
        sys.executable,
        "manage.py",
        "bench_scale",
        "--chunks",
        "300",
        "--workspaces",
        "2",
        "--queries",
        "5",
        "--corpus",
        str(corpus),
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=worker_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stderr:
            if line.startswith("wrote"):  # the workspaces exist and are being filled
                assert Workspace.objects.filter(slug__startswith="bench-scale").count() == 2
                process.send_signal(signal.SIGTERM)
                break
        assert process.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        process.kill()
    _nothing_left()


def test_derived_chunks_are_recombined_real_sentences_with_vectors_near_their_sources():
    records = list(read_jsonl(_default_data_dir() / "corpus.jsonl.gz"))[:300]
    embedded: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(len(embedded))
        vectors = rng.normal(size=(len(texts), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        embedded.update(zip(texts, vectors, strict=True))
        return vectors

    corpus = build_corpus(records, chunks=700, workspaces=3, size=800, overlap=120, embed=embed, report=lambda message: None)

    assert [sum(len(d.drafts) for d in docs) for docs in corpus.workspaces] == [234, 233, 233]
    assert corpus.count(real=True) + corpus.count(real=False) == 700
    assert 50 <= len(embedded) < 100, "only the seed abstracts are embedded for real"
    real_sentences = {" ".join(text[s.start : s.end].split()) for text in map(document_text, records) for s in sentence_spans(text) if text}
    real_vectors = np.stack(list(embedded.values()))
    derived = [d for docs in corpus.workspaces for d in docs if not d.real]
    texts = [d.extracted.text for d in derived]
    assert len(set(texts)) == len(texts), "no derived document repeats another"
    for document in derived:
        assert _made_of(document.extracted.text, real_sentences)
        assert np.allclose(np.linalg.norm(document.vectors, axis=1), 1.0, atol=1e-5)
        # Each derived vector leans towards the real embeddings it was mixed from, far above chance (~0.05).
        assert (document.vectors @ real_vectors.T).max(axis=1).min() > 0.3
    for docs in corpus.workspaces:
        for document in (d for d in docs if d.real):
            assert all(np.any(np.all(np.isclose(real_vectors, v), axis=1)) for v in document.vectors)


def _made_of(text: str, sentences: set[str]) -> bool:
    """Whether the text is nothing but these sentences, joined by spaces."""
    leftover = text
    for sentence in sorted((s for s in sentences if s in text), key=len, reverse=True):
        leftover = leftover.replace(sentence, " ")
    return not leftover.strip()
