"""The rerankers: scores in [0, 1], the answering passage first, and the cross-encoder when one loads."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from apps.pipeline.embedding import default_model_path, get_embedder
from apps.pipeline.rerank import CrossEncoderReranker, LocalReranker, content_terms, coverage, get_reranker
from apps.pipeline.types import Candidate


def candidate(n: int, text: str) -> Candidate:
    return Candidate(f"c{n}", f"d{n}", f"doc {n}", 0, text, 0, len(text), None, None, None, None, 0.0)


PASSAGES = [
    candidate(1, "The bakery opens at six. Its sourdough is fed twice a day."),
    candidate(2, "Tides are driven by the Moon. The Skerryvore lighthouse is 48 metres tall and was completed in 1844."),
    candidate(3, "Beavers build dams from branches and mud. They are mostly active at night."),
]
QUESTION = "How tall is the Skerryvore lighthouse?"


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()


def test_local_reranker_puts_the_answering_passage_first_with_its_best_sentence(embedder):
    scored = LocalReranker(embedder).rerank(QUESTION, embedder.embed([QUESTION])[0], PASSAGES)
    assert scored[0].candidate.chunk_id == "c2"
    assert scored[0].best_sentence == "The Skerryvore lighthouse is 48 metres tall and was completed in 1844."
    assert all(0.0 <= s.score <= 1.0 for s in scored)
    assert scored[0].score > scored[1].score
    assert set(scored[0].parts) == {"sentence", "chunk", "coverage"}
    assert scored[0].parts["coverage"] == 1.0


def test_local_reranker_scores_an_unrelated_passage_low(embedder):
    scored = LocalReranker(embedder).rerank(
        "What is the capital of Mongolia?", embedder.embed(["What is the capital of Mongolia?"])[0], PASSAGES
    )
    assert max(s.score for s in scored) < 0.35


def test_coverage_counts_the_questions_content_words_with_plurals_folded():
    terms = content_terms("Which dams do beavers build?")
    assert terms == {"dam", "beaver", "build"}
    assert coverage(terms, "A beaver builds a dam.") == 1.0
    assert coverage(terms, "Otters swim.") == 0.0
    assert coverage(set(), "anything") == 0.0


def test_a_loadable_cross_encoder_is_used_and_names_itself(tmp_path, embedder):
    from sentence_transformers import CrossEncoder

    # A real CrossEncoder built from the local MiniLM weights (its scoring head is untrained:
    # this checks the path, not the quality).
    CrossEncoder(default_model_path(), num_labels=1, device="cpu").save(str(tmp_path / "ce"))
    reranker = get_reranker(str(tmp_path / "ce"), embedder)
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.name == f"cross-encoder:{tmp_path / 'ce'}"
    scored = reranker.rerank(QUESTION, np.zeros(384, dtype=np.float32), PASSAGES)
    assert len(scored) == 3
    assert all(0.0 <= s.score <= 1.0 for s in scored)


def test_a_model_that_does_not_load_falls_back_to_the_local_reranker(tmp_path, embedder, caplog):
    with caplog.at_level(logging.WARNING):
        reranker = get_reranker(str(tmp_path / "no-such-model"), embedder)
    assert isinstance(reranker, LocalReranker)
    assert "did not load" in caplog.text


def test_the_embedder_encodes_a_text_once_and_answers_the_same_vector_from_its_cache(embedder):
    from apps.pipeline.embedding import Embedder

    fresh = Embedder(default_model_path(), cache_size=2)
    first = fresh.embed(["alpha beta", "gamma delta", "alpha beta"])
    assert first.shape == (3, 384)
    assert np.array_equal(first[0], first[2])
    assert list(fresh._cache) == ["alpha beta", "gamma delta"]
    again = fresh.embed(["gamma delta", "epsilon"])
    assert np.array_equal(again[0], first[1])
    assert list(fresh._cache) == ["gamma delta", "epsilon"], "least recently used goes first"
    assert np.allclose(np.linalg.norm(again, axis=1), 1.0, atol=1e-5)
