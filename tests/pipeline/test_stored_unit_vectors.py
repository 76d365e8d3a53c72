"""Unit vectors stored at ingestion: an answer embeds its question, not its passages."""

from __future__ import annotations

import numpy as np

from apps.pipeline.answer import AnswerParams, Tools, retrieve_and_rerank
from apps.pipeline.corrective import CorrectiveParams
from apps.pipeline.embedding import Embedder, get_embedder, pack_vectors, unpack_vectors
from apps.pipeline.rerank import LocalReranker
from apps.pipeline.retrieval import RetrievalParams
from apps.pipeline.text import passage_header, unit_reads
from apps.pipeline.trust import TrustWeights
from apps.pipeline.types import Candidate

PASSAGES = [
    "Skerryvore is a lighthouse off Scotland. It was built between 1838 and 1844. The tower is 48 metres tall.",
    "Ferries to Tiree leave Oban daily in summer. The crossing takes about four hours.",
]


class Counting(Embedder):
    """The real model, counting what it is asked to encode."""

    def __init__(self):
        real = get_embedder()
        super().__init__(real.model_name_or_path, real.batch_size)
        self._model = real.model
        self.encoded: list[str] = []

    def _encode(self, texts, batch_size):
        self.encoded.extend(texts)
        return super()._encode(texts, batch_size)


def candidate(index: int, text: str, vectors: bytes | None) -> Candidate:
    return Candidate(f"c{index}", "d1", "notes", index, text, 0, len(text), 1, 0.5, 1, 1.0, 0.03, cosine=0.5, unit_vectors=vectors)


def stored(text: str) -> bytes:
    return pack_vectors(get_embedder().embed(unit_reads(text)))


def params_for() -> AnswerParams:
    return AnswerParams(
        retrieval=RetrievalParams(),
        corrective=CorrectiveParams(),
        trust=TrustWeights(),
        gate_threshold=0.26,
        rerank_top_n=5,
        locator_threshold=90,
        answer_max_claims=3,
    )


def tools_for(embedder, candidates):
    return Tools(embedder=embedder, reranker=LocalReranker(embedder), search=lambda *args: candidates, local_judge=None)


def test_with_stored_vectors_reranking_encodes_only_the_question():
    embedder = Counting()
    candidates = [candidate(i, text, stored(text)) for i, text in enumerate(PASSAGES)]
    retrieved = retrieve_and_rerank("How tall is Skerryvore?", params=params_for(), tools=tools_for(embedder, candidates))
    assert embedder.encoded == ["How tall is Skerryvore?"]
    assert retrieved.reranked[0].candidate.chunk_id == "c0"
    assert retrieved.reranked[0].best_sentence in unit_reads(PASSAGES[0])


def test_without_them_the_units_are_encoded_and_rank_the_same():
    embedder = Counting()
    with_vectors = retrieve_and_rerank(
        "How tall is Skerryvore?",
        params=params_for(),
        tools=tools_for(Counting(), [candidate(i, t, stored(t)) for i, t in enumerate(PASSAGES)]),
    )
    without = retrieve_and_rerank(
        "How tall is Skerryvore?",
        params=params_for(),
        tools=tools_for(embedder, [candidate(i, t, None) for i, t in enumerate(PASSAGES)]),
    )
    assert len(embedder.encoded) > 1
    assert [s.candidate.chunk_id for s in without.reranked] == [s.candidate.chunk_id for s in with_vectors.reranked]
    assert np.allclose([s.score for s in without.reranked], [s.score for s in with_vectors.reranked], atol=2e-3), "float16 storage"


def test_vectors_stored_under_another_reading_are_not_used():
    embedder = Counting()
    wrong = pack_vectors(get_embedder().embed(["just one unit"]))
    retrieve_and_rerank("How tall is Skerryvore?", params=params_for(), tools=tools_for(embedder, [candidate(0, PASSAGES[0], wrong)]))
    assert set(unit_reads(PASSAGES[0])) <= set(embedder.encoded), "a count that does not match is ignored"


def test_packing_keeps_vectors_to_float16_precision():
    vectors = get_embedder().embed(PASSAGES)
    again = unpack_vectors(pack_vectors(vectors))
    assert again.shape == vectors.shape
    assert np.abs(again - vectors).max() < 1e-3


def test_a_passage_opening_inside_a_table_is_read_under_the_heading_in_the_document():
    document = (
        "Results by state\nState Permit Handgun Totals\nAlabama 18,870 23,022 71,137\nAlaska 209 3,062 7,095\nTexas 21,550 56,941 146,982"
    )
    start = document.index("Alaska")
    passage = document[start:]
    assert passage_header(passage, start, document) == "State Permit Handgun Totals"
    assert unit_reads(passage, "State Permit Handgun Totals")[0] == "State Permit Handgun Totals\nAlaska 209 3,062 7,095"
    assert passage_header(document, 0, document) is None, "a passage holding its table's heading needs none"
