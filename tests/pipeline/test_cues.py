"""The deterministic checks beside the local judge's model, and the reading they rest on."""

from apps.pipeline.judging.checks import check
from apps.pipeline.judging.cues import numbers_in
from apps.pipeline.verifier_judge import VerifierJudge


def test_numbers_are_normalised_and_names_with_digits_are_no_numbers():
    assert numbers_in("Of 32,441 samples, 0.50 were positive; two-fold in COVID-19 and IL-6 (p53).") == ["32441", "0.5", "2"]


def _check(claim: str, passage: str):
    return check(claim, passage, 0, len(passage))


def test_a_negation_on_one_side_only_is_read_where_it_bears_on_the_other_text():
    passage = "Statins lower LDL cholesterol by 20 percent."
    assert _check("Statins do not lower LDL cholesterol by 20 percent.", passage).negation_mismatch
    assert not _check("Statins lower LDL cholesterol by 20 percent, but not in children.", passage).negation_mismatch


def test_a_number_stated_otherwise_or_not_at_all_is_named():
    passage = "The trial enrolled 120 patients over 6 weeks."
    renumbered = _check("The trial enrolled 150 patients over 6 weeks.", passage)
    assert renumbered.renumbered == ("150", "120")
    assert renumbered.veto() == "the claim says 150 where the passage says 120"
    assert _check("The trial enrolled 120 patients over 8 weeks in 2019.", passage).missing_numbers == ("8", "2019")


def test_swapped_roles_are_read_and_the_passive_is_not_a_swap():
    passage = "Aspirin inhibits the enzyme COX-1 in platelets."
    assert _check("The enzyme COX-1 inhibits Aspirin in platelets.", passage).swapped
    assert not _check("The enzyme COX-1 is inhibited by Aspirin in platelets.", passage).swapped


def test_a_claim_saying_its_quote_in_other_words_passes_every_check():
    passage = "Statins lower LDL cholesterol by 20 percent."
    same = _check("LDL cholesterol falls by 20 percent with statins.", passage)
    assert same.veto() == ""


def test_a_check_that_fires_vetoes_the_judges_supports():
    class Sure:
        def support(self, pairs):
            return [{"supports": 0.9, "contradicts": 0.05, "not_found": 0.05} for _ in pairs]

    passage = "The trial enrolled 120 patients over 6 weeks."
    judge = VerifierJudge(Sure())
    vetoed = judge.judge("The trial enrolled 150 patients over 6 weeks.", passage, 0, len(passage))
    assert vetoed.verdict == "contradicts"
    assert vetoed.rationale == "the claim says 150 where the passage says 120"
    assert vetoed.score == 0.1, "its confidence is 1 - p(supports), so the calibration reads p(supports)"
    assert judge.judge("The trial enrolled 120 patients over 6 weeks.", passage, 0, len(passage)).verdict == "supports"


def test_a_number_replaced_after_a_reworded_phrase_is_still_named():
    passage = "Overall survival was longer, at 14 months in the treated group."
    assert _check("Overall survival was better, at 18 months in the treated group.", passage).renumbered == ("18", "14")


def test_a_claim_that_is_its_quote_is_supported_without_the_model():
    class Doubtful:
        def support(self, pairs):
            return [{"supports": 0.2, "contradicts": 0.3, "not_found": 0.5} for _ in pairs]

    passage = "Texas 21,550 56,941 51,670 2,532 3,048 0 146,982"
    judgement = VerifierJudge(Doubtful()).judge("Texas 21,550 56,941 51,670 2,532 3,048 0 146,982.", passage, 0, len(passage))
    assert (judgement.verdict, judgement.score) == ("supports", 1.0)
    assert judgement.rationale == "the passage states the claim word for word"
