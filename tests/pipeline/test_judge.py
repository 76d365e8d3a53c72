"""The local support judge: what turns a close paraphrase into an unsupported claim, with the shipped model."""

from __future__ import annotations

import pytest

from apps.pipeline.judging.cues import numbers_in, quantities_in
from apps.pipeline.judging.feature_judge import MODEL_PATH, SoftmaxModel, get_local_judge
from apps.pipeline.judging.features import FEATURES, lexical_features
from apps.pipeline.judging.verdicts import judge_all

PASSAGE = (
    "Background: vitamin D deficiency is common in older adults. "
    "In this randomised trial of 420 adults aged over 65, daily vitamin D supplementation reduced the rate of falls by 23% over 12 months. "
    "Adverse events were rare in both groups."
)
QUOTE = (
    "In this randomised trial of 420 adults aged over 65, daily vitamin D supplementation reduced the rate of falls by 23% over 12 months."
)


def judged(claim: str, passage: str = PASSAGE, quote: str = QUOTE):
    start = passage.index(quote)
    return get_local_judge().judge(claim, passage, start, start + len(quote))


def test_a_close_paraphrase_is_supported():
    judgement = judged("Daily vitamin D supplements lowered the rate of falls in adults over 65 by 23 percent.")
    assert judgement.verdict == "supports"
    assert 0 < judgement.score <= 1


def test_a_claim_restating_the_quote_is_supported_word_for_word():
    judgement = judged(QUOTE)
    assert judgement.verdict == "supports"
    assert judgement.rationale == "the passage states the claim word for word"


def test_a_different_number_is_not_supported_and_the_rationale_names_it():
    judgement = judged("Daily vitamin D supplementation reduced the rate of falls by 32% over 12 months in adults over 65.")
    assert judgement.verdict == "contradicts"
    assert "32" in judgement.rationale


def test_the_same_number_in_another_unit_is_not_supported():
    judgement = judged("Daily vitamin D supplementation reduced the rate of falls by 23% over 12 weeks in adults over 65.")
    assert judgement.verdict != "supports"


def test_a_negated_claim_contradicts():
    judgement = judged("Daily vitamin D supplementation did not reduce the rate of falls in adults over 65.")
    assert judgement.verdict == "contradicts"
    assert "negated" in judgement.rationale


def test_the_opposite_direction_contradicts():
    judgement = judged("Daily vitamin D supplementation increased the rate of falls by 23% over 12 months in adults over 65.")
    assert judgement.verdict == "contradicts"


IL6_PASSAGE = "Interleukin-6 activates STAT3 in hepatocytes, and STAT3 then induces the acute phase response. The effect needs gp130."
IL6_QUOTE = "Interleukin-6 activates STAT3 in hepatocytes, and STAT3 then induces the acute phase response."


def test_another_name_in_place_of_the_passages_is_not_supported():
    judgement = judged("Interleukin-6 activates STAT1 in hepatocytes.", IL6_PASSAGE, IL6_QUOTE)
    assert judgement.verdict == "contradicts"
    assert "STAT1" in judgement.rationale


def test_swapped_roles_are_not_supported():
    judgement = judged("STAT3 activates interleukin-6 in hepatocytes.", IL6_PASSAGE, IL6_QUOTE)
    assert judgement.verdict == "contradicts"
    assert "swaps the roles" in judgement.rationale


def test_the_same_relation_in_the_passive_is_supported():
    assert judged("In hepatocytes, STAT3 is activated by interleukin-6.", IL6_PASSAGE, IL6_QUOTE).verdict == "supports"


def test_a_certain_claim_from_a_hedged_passage_is_partial():
    passage = "Cohort data were collected from 2010 to 2015. These results suggest that metformin may reduce the risk of colorectal cancer in diabetic patients."
    quote = "These results suggest that metformin may reduce the risk of colorectal cancer in diabetic patients."
    judgement = judged("Metformin reduces the risk of colorectal cancer in diabetic patients.", passage, quote)
    assert judgement.verdict == "partial"
    assert "hedges" in judgement.rationale


def test_a_claim_the_passage_does_not_address_is_not_found():
    judgement = judged("Vitamin D supplementation cures seasonal depression in teenagers.")
    assert judgement.verdict in ("not_found", "contradicts")
    assert judgement.verdict != "supports"


def test_judge_many_answers_in_order_and_matches_single_calls():
    judge = get_local_judge()
    start = PASSAGE.index(QUOTE)
    claims = ["Daily vitamin D supplementation did not reduce falls.", QUOTE]
    many = judge_all(judge, [(c, PASSAGE, start, start + len(QUOTE)) for c in claims])
    assert [j.verdict for j in many] == [judged(c).verdict for c in claims]


def test_numbers_are_normalised_and_names_with_digits_are_no_numbers():
    assert numbers_in("Of 32,441 samples, 0.50 were positive; two-fold in COVID-19 and IL-6 (p53).") == ["32441", "0.5", "2"]
    assert quantities_in("5 mg/kg daily for 3 weeks, 15% of them") == [("5", "mg/kg"), ("3", "week"), ("15", "percent")]


def test_hedge_and_negation_cues_are_read_from_claim_and_quote():
    passage = "Statins might lower LDL cholesterol."
    values, reading = lexical_features("Statins do not lower LDL cholesterol.", passage, 0, len(passage))
    assert values["neg_mismatch"] == 1.0
    assert values["hedge_gap"] == 1.0
    assert reading.hedge == "might"


def test_the_shipped_model_matches_the_features_and_was_held_out_evaluated():
    model = SoftmaxModel.load(MODEL_PATH)
    assert model.features == FEATURES
    assert model.weights.shape == (4, len(FEATURES))
    assert 0 < model.supports_threshold < 1


@pytest.mark.parametrize("claim", ["", "   "])
def test_an_empty_claim_is_never_supported(claim):
    assert judged(claim).verdict != "supports"


def test_the_local_judge_shares_the_products_embedder_instead_of_loading_a_second_model():
    from django.conf import settings

    from apps.pipeline.embedding import get_embedder

    assert get_local_judge().embedder is get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)


STATINS = (
    "Participants were followed for two years. Statin therapy lowered LDL cholesterol in most patients with familial "
    "hypercholesterolaemia. Muscle pain was the commonest side effect."
)
STATINS_QUOTE = "Statin therapy lowered LDL cholesterol in most patients with familial hypercholesterolaemia."


def test_a_claim_about_all_where_the_passage_says_most_is_partial():
    judgement = judged("Statin therapy lowers LDL cholesterol in all patients with familial hypercholesterolaemia.", STATINS, STATINS_QUOTE)
    assert judgement.verdict == "partial"
    assert "generalises" in judgement.rationale


def test_a_reworded_claim_with_the_same_meaning_is_supported():
    judgement = judged("In familial hypercholesterolaemia, statins reduced LDL cholesterol in most patients.", STATINS, STATINS_QUOTE)
    assert judgement.verdict == "supports"
