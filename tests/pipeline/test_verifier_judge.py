"""The verifier as the local judge (no database): what it reads, and the deterministic vetoes
that hold whatever the model believes."""

from __future__ import annotations

import pytest

from apps.pipeline.verifier import DEFAULT_PATH
from apps.pipeline.verifier_judge import VerifierJudge, VerifierParams, get_verifier_judge

PASSAGE = (
    "Skerryvore is a lighthouse on a reef off the west coast of Scotland. "
    "The tower is 48 metres tall, the tallest lighthouse in Scotland. "
    "The light was automated in 1972 and is now monitored from Edinburgh."
)
TALL = "The tower is 48 metres tall"


@pytest.fixture(scope="module")
def judge() -> VerifierJudge:
    return get_verifier_judge(str(DEFAULT_PATH), 1)


def located(claim: str, quote: str = TALL) -> tuple[str, str, int, int]:
    start = PASSAGE.index(quote)
    return claim, PASSAGE, start, start + len(quote)


def test_a_changed_number_is_a_contradiction_whatever_the_model_believes(judge):
    judgement = judge.judge(*located("The Skerryvore tower is 52 metres tall."))
    assert judgement.verdict == "contradicts"
    assert "52" in judgement.rationale
    assert "48" in judgement.rationale


def test_a_number_the_passage_never_states_is_not_found(judge):
    judgement = judge.judge(*located("The Skerryvore tower is 48 metres tall and weighs 4300 tonnes."))
    assert judgement.verdict == "not_found"
    assert "4300" in judgement.rationale


def test_a_negation_on_one_side_only_is_a_contradiction(judge):
    judgement = judge.judge(*located("The Skerryvore tower is not 48 metres tall."))
    assert judgement.verdict == "contradicts"


def test_without_the_checks_the_model_alone_decides(judge):
    bare = VerifierJudge(judge.verifier, VerifierParams(checks=False))
    request = located("The Skerryvore tower is 52 metres tall.")
    p = bare.support_probability(*request)
    judgement = bare.judge(*request)
    assert (judgement.verdict == "supports") == (p >= 0.5)
    assert "the verifier" in judgement.rationale or "does not state" in judgement.rationale


def test_the_support_head_reads_the_quote_alone_and_answerability_a_sentence_either_side(judge):
    _, passage, start, end = located("It is tall.")
    read = judge._quote_read(passage, start, end)
    assert read.startswith(passage[start:end]), "the sentence that holds the quote, and no neighbour"
    assert read.endswith("the tallest lighthouse in Scotland.")
    window = judge._window(passage, start, end, judge.params.answer_context)
    assert window.startswith("Skerryvore is a lighthouse")
    assert window.endswith("monitored from Edinburgh.")


def test_a_table_row_is_read_under_its_heading_line(judge):
    table = "Harbour towns\n\nTown | Boats | Piers\nOban | 40 | 3\nMallaig | 25 | 2\n"
    start = table.index("Mallaig")
    end = start + len("Mallaig | 25 | 2")
    assert judge._quote_read(table, start, end) == "Town | Boats | Piers\nMallaig | 25 | 2"


def test_a_batch_is_judged_in_order_with_probabilities_that_sum_to_one(judge):
    requests = [located("The Skerryvore tower is 48 metres tall."), located("The tower is 52 metres tall.")]
    probabilities = judge.support_probabilities(requests)
    assert len(probabilities) == 2
    assert all(abs(sum(p.values()) - 1) < 1e-4 for p in probabilities)
    assert [j.verdict for j in judge.judge_many(requests)][1] == "contradicts"
    assert judge.judge_many([]) == []


def test_answerability_is_a_probability_per_sentence_in_order(judge):
    scores = judge.answerabilities("How tall is the Skerryvore tower?", ["The tower is 48 metres tall.", "Bread is baked at six."])
    assert len(scores) == 2
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert 0.0 <= judge.answerability("How tall is the tower?", PASSAGE, PASSAGE.index(TALL), PASSAGE.index(TALL) + len(TALL)) <= 1.0
