"""The local extractive provider's choice of sentences, with and without an answerability model
(the real MiniLM embedder; answerability given as the plain function the provider takes)."""

from __future__ import annotations

from apps.pipeline.embedding import get_embedder
from apps.pipeline.generation import ExtractiveParams, local_extractive_answer
from apps.pipeline.types import Candidate

QUESTION = "What top-20 retrieval accuracy does dense passage retrieval reach on Natural Questions?"
INTRO = "Dense passage retrieval is a method for open-domain question answering on Natural Questions."
MOTIVE = "Retrieval of passages for questions on Natural Questions has long used sparse vectors."
FIGURE = "On Natural Questions, dense passage retrieval reaches 78.4% top-20 retrieval accuracy."


def source(text: str) -> Candidate:
    return Candidate("c1", "d1", "dpr.pdf", 0, text, 0, len(text), 1, 0.9, 1, 0.9, 0.03)


def answer(answerability=None, **params):
    embedder = get_embedder()
    vector = embedder.embed([QUESTION])[0]
    sources = [source(f"{INTRO} {MOTIVE} {FIGURE}")]
    return local_extractive_answer(vector, sources, embedder, ExtractiveParams(**params), question=QUESTION, answerability=answerability)


def holds_a_number(question: str, sentences: list[str]) -> list[float]:
    """Stands in for the verifier: a sentence with a figure answers a 'what accuracy' question."""
    return [0.9 if any(ch.isdigit() for ch in s.replace("20", "")) else 0.05 for s in sentences]


def test_with_answerability_the_sentence_that_answers_leads():
    given = answer(holds_a_number)
    assert given.claims[0].quote == FIGURE
    assert not given.insufficient


def test_sentences_unlikely_to_answer_are_not_said():
    given = answer(holds_a_number)
    assert [c.quote for c in given.claims] == [FIGURE]


def test_when_no_sentence_answers_the_provider_says_so():
    given = answer(lambda question, sentences: [0.01] * len(sentences))
    assert given.insufficient
    assert given.claims == ()


def test_without_answerability_the_most_similar_sentences_are_said_as_before():
    given = answer(None)
    assert given.claims
    assert {c.quote for c in given.claims} <= {INTRO, MOTIVE, FIGURE}
    assert all(c.quote == c.text for c in given.claims)
