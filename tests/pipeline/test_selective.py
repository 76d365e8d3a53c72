"""Calibrated p(supports) and the three outcomes (verified, flagged, unsure) it gives a claim."""

from __future__ import annotations

import itertools

import pytest

from apps.pipeline.judging.selective import (
    FLAGGED,
    LOCAL_JUDGE_NAME,
    UNSURE,
    VERIFIED,
    Calibration,
    Thresholds,
    claim_outcome,
    fit,
    judge_score,
    outcome,
    unsure_share,
)
from apps.pipeline.trust import TrustWeights, trust_score
from apps.pipeline.types import Claim, Location, VerifiedClaim
from bench.verify import GoldClaim, judge_probabilities, selective_metrics


def test_the_fit_is_a_step_function_that_never_falls_and_keeps_its_counts():
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    faithful = [False, False, True, False, True, True, False, True]
    calibration = fit(scores, faithful)
    values = calibration.values
    assert all(a < b for a, b in itertools.pairwise(values))
    assert sum(calibration.faithful) == 4
    assert sum(calibration.unfaithful) == 4
    # 0.3 (faithful) and 0.4 (not) pool into one step of one half; 0.7 pools likewise with 0.5–0.6.
    assert calibration.probability(0.1) == 0.0
    assert calibration.probability(0.35) == 0.5
    assert calibration.probability(0.65) == pytest.approx(2 / 3)
    assert calibration.probability(0.99) == 1.0, "above every calibration score: the top step"
    assert Calibration.from_json(calibration.to_json()) == calibration


def test_thresholds_come_from_the_counts_at_the_target_precision():
    # Steps of p 0.0 (40 claims), 0.5 (20), 0.9 (50: 45 faithful), 1.0 (30).
    calibration = Calibration(bounds=(0.2, 0.5, 0.8, 1.0), faithful=(0, 10, 45, 30), unfaithful=(40, 10, 5, 0))
    at_95 = calibration.thresholds(0.95)
    # 30 + 45 of 80 are faithful (0.9375 < 0.95): only the top step verifies; the bottom step alone flags.
    assert (at_95.verify, at_95.flag) == (1.0, 0.0)
    at_90 = calibration.thresholds(0.90)
    assert at_90.verify == 0.9
    assert at_90.flag == 0.0, "40 of 60 unfaithful once the 0.5 step joins: below 0.90"
    assert calibration.thresholds(0.99).verify == 1.0
    assert Calibration(bounds=(1.0,), faithful=(5,), unfaithful=(5,)).thresholds(0.95) == Thresholds(0.95, None, None)
    # A top step of three claims, all faithful, is no evidence of 0.95 on its own; with the 40 below it, it is.
    few = Calibration(bounds=(0.5, 0.9, 1.0), faithful=(0, 39, 3), unfaithful=(30, 1, 0))
    assert few.thresholds(0.95).verify == 0.975
    assert Calibration(bounds=(0.5, 1.0), faithful=(0, 3), unfaithful=(30, 0)).thresholds(0.95).verify is None


def test_a_claim_between_the_thresholds_is_unsure_and_an_unlocated_quote_is_flagged():
    thresholds = Thresholds(0.95, verify=0.9, flag=0.1)
    assert outcome(0.95, thresholds) == VERIFIED
    assert outcome(0.9, thresholds) == VERIFIED
    assert outcome(0.5, thresholds) == UNSURE
    assert outcome(0.1, thresholds) == FLAGGED
    assert outcome(None, thresholds) == FLAGGED
    assert outcome(0.99, Thresholds(0.95, None, None)) == UNSURE


def test_a_judges_belief_reads_its_verdict_and_confidence():
    assert judge_score("supports", 0.8) == 0.8
    assert judge_score("not_found", 0.8) == pytest.approx(0.2)
    assert judge_score("contradicts", 1.0) == 0.0


def _claim(verdict: str, score: float | None, located: bool = True) -> VerifiedClaim:
    location = Location("located" if located else "hallucinated_quote", "exact" if located else "none", 100.0 if located else 0.0)
    return VerifiedClaim(Claim("c", 1, "q"), "t", location, verdict, verdict == "supports", "local", "", score)


def _gold(faithful: bool) -> GoldClaim:
    return GoldClaim("g", "s", "c", "q", "supports" if faithful else "not_found", "verbatim")


def test_selective_metrics_are_counted_by_hand():
    predicted = [
        _claim("supports", 0.95),  # p 0.95: verified, faithful
        _claim("supports", 0.92),  # verified, unfaithful
        _claim("supports", 0.6),  # unsure
        _claim("not_found", 0.95),  # p 0.05: flagged, unfaithful
        _claim("hallucinated_quote", None, located=False),  # flagged, unfaithful
        _claim("supports", 0.7),  # unsure, faithful
    ]
    golds = [_gold(True), _gold(False), _gold(True), _gold(False), _gold(False), _gold(True)]
    p = judge_probabilities(predicted, None)
    assert p[3] == pytest.approx(0.05)
    assert p[4] is None
    result = selective_metrics(golds, p, [outcome(q, Thresholds(0.95, verify=0.9, flag=0.1)) for q in p])
    assert result["selective"] == {"verified_precision": 0.5, "verified_recall": 0.3333, "flagged_precision": 1.0, "unsure_rate": 0.3333}
    # faithful p: 0.95, 0.6, 0.7; unfaithful p: 0.92, 0.05, 0 — 7 of 9 pairs ranked right (0.92 beats 0.6 and 0.7).
    assert result["auroc"] == round(7 / 9, 4)
    assert 0.0 < result["ece"] < 1.0


def test_the_target_precision_decides_what_the_local_judge_may_settle_on_its_own():
    sure = {"verdict": "supports", "confidence": 0.99, "verbatim": False}
    assert claim_outcome(LOCAL_JUDGE_NAME, sure["verdict"], sure["confidence"], verbatim=False, target=0.95)[0] == UNSURE
    assert claim_outcome(LOCAL_JUDGE_NAME, sure["verdict"], sure["confidence"], verbatim=False, target=0.6)[0] == VERIFIED
    assert unsure_share(LOCAL_JUDGE_NAME, 0.6) < unsure_share(LOCAL_JUDGE_NAME, 0.95)
    assert claim_outcome(LOCAL_JUDGE_NAME, "not_found", 0.9, verbatim=True, target=0.95) == (VERIFIED, None), "a claim that is its quote"
    assert claim_outcome("llm:groq", "contradicts", 0.8, verbatim=False, target=0.95) == (FLAGGED, None), "the LLM's verdict decides"
    assert claim_outcome("llm:groq", "supports", 0.8, verbatim=False, target=0.95) == (VERIFIED, None)


def test_an_unsure_claim_is_neither_supported_nor_hallucinated_in_the_trust_score_and_keeps_the_answer_from_low():
    def claim(outcome: str, faithful: bool, p: float | None) -> VerifiedClaim:
        location = Location("located", "exact", 100.0)
        return VerifiedClaim(
            Claim("c", 1, "q"),
            "t",
            location,
            "supports" if faithful else "not_found",
            faithful,
            "local",
            "",
            0.9,
            outcome=outcome,
            p_supports=p,
        )

    verified = [claim("verified", True, None), claim("unsure", False, 0.6)]
    trust = trust_score(retrieval=1.0, agreement=1.0, verified=verified, refused=False, weights=TrustWeights(low_cutoff=0.5))
    assert trust.grounding == 0.8, "1 for the verified claim, p 0.6 for the unsure one"
    assert trust.risk == "medium"
    assert "1 of 2 claim(s) not checked by the local judge: read their quotes" in trust.reasons
    leaning = [claim("verified", True, None), claim("unsure", False, 0.3)]
    leaning[1] = VerifiedClaim(**{**leaning[1].__dict__, "verdict": "contradicts"})
    reasons = trust_score(retrieval=1.0, agreement=1.0, verified=leaning, refused=False, weights=TrustWeights()).reasons
    assert not any("judged contradicts" in r for r in reasons), "an unsure claim's tentative verdict is never named as found"
