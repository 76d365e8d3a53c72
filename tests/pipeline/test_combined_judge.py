"""The combined local judge (no database): the feature judge's cues and the verifier's reading,
weighed by one model that names the features it needs."""

from __future__ import annotations

import json

import pytest

from apps.pipeline.combined_judge import COMBINED_MODEL_PATH, CombinedJudge, combined_rows, get_combined_judge
from apps.pipeline.judging.feature_judge import MODEL_PATH, SoftmaxModel, get_local_judge
from apps.pipeline.judging.features import FEATURES, VERIFIER_FEATURES
from apps.pipeline.verifier import DEFAULT_PATH
from tests.pipeline.test_judge import PASSAGE, QUOTE


@pytest.fixture(scope="module")
def judge() -> CombinedJudge:
    return get_combined_judge(str(DEFAULT_PATH), 1)


def located(claim: str) -> tuple[str, str, int, int]:
    start = PASSAGE.index(QUOTE)
    return claim, PASSAGE, start, start + len(QUOTE)


def test_the_shipped_model_names_the_verifiers_features_and_was_evaluated_on_held_out_claims():
    model = SoftmaxModel.load(COMBINED_MODEL_PATH)
    assert model.features == FEATURES + VERIFIER_FEATURES
    assert model.weights.shape == (4, len(FEATURES) + len(VERIFIER_FEATURES))
    held_out = json.loads(COMBINED_MODEL_PATH.read_text())["held_out"]
    assert {"scifact", "healthver", "synthetic"} <= held_out.keys()


def test_a_feature_judge_model_cannot_pass_for_a_combined_one(judge):
    with pytest.raises(ValueError, match="with-verifier"):
        CombinedJudge(SoftmaxModel.load(MODEL_PATH), get_local_judge(), judge.verifier)


def test_the_verifiers_probabilities_close_each_row(judge):
    rows, _, _ = combined_rows([located("Vitamin D lowered falls.")], judge.features.embedder, judge.verifier)
    verifier_part = rows[0, len(FEATURES) :]
    assert len(verifier_part) == len(VERIFIER_FEATURES)
    assert verifier_part.sum() == pytest.approx(1.0, abs=1e-4)
    p = judge.verifier.support_probabilities([located("Vitamin D lowered falls.")])[0]
    assert verifier_part[0] == pytest.approx(p["supports"])


def test_a_close_paraphrase_is_supported_and_the_verifier_is_named(judge):
    judgement = judge.judge(*located("Daily vitamin D supplements lowered the rate of falls in adults over 65 by 23 percent."))
    assert judgement.verdict == "supports"
    assert "the verifier's p(supports)" in judgement.rationale


def test_a_changed_number_is_not_supported(judge):
    judgement = judge.judge(*located("Daily vitamin D supplementation reduced the rate of falls by 32% over 12 months in adults over 65."))
    assert judgement.verdict != "supports"
    assert "32" in judgement.rationale


def test_judge_many_matches_single_calls_in_order(judge):
    claims = ["Daily vitamin D supplementation did not reduce falls.", QUOTE]
    many = judge.judge_many([located(c) for c in claims])
    assert [j.verdict for j in many] == [judge.judge(*located(c)).verdict for c in claims]
    assert many[1].verdict == "supports"


def test_the_gates_answerability_reads_the_question_as_a_claim_through_the_combined_model(judge):
    start = PASSAGE.index(QUOTE)
    question = "By how much did vitamin D reduce falls?"
    p = judge.answerability(question, PASSAGE, start, start + len(QUOTE))
    assert p == pytest.approx(judge.support_probability(question, PASSAGE, start, start + len(QUOTE)))
