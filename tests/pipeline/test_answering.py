"""Whether each claim answers the question (apps/pipeline/answering.py): the calibration the
product loads, claims read against the question with their neighbours, and the trust score that
an answer whose claims are faithful but may not answer cannot reach Low risk with."""

from __future__ import annotations

import json

import pytest

from apps.pipeline.answering import CALIBRATION_PATH, AnswerReader, Calibration, answering, read_claims, window
from apps.pipeline.trust import LOW, MEDIUM, TrustWeights, source_agreement, trust_score
from apps.pipeline.types import Candidate, Claim, Location, VerifiedClaim

PASSAGE = (
    "The lighthouse stands on the northern cape. It was completed in 1844 and is 48 metres tall. "
    "Its lamp was electrified in 1921. Visitors may climb it in summer."
)


def source(text: str = PASSAGE, start: int = 500) -> Candidate:
    return Candidate("c1", "d1", "Lighthouse notes", 0, text, start, start + len(text), 1, 0.9, None, None, 0.5)


def located(quote: str, passage: Candidate) -> VerifiedClaim:
    start = passage.start + passage.text.index(quote)
    return VerifiedClaim(
        Claim(quote, 1, quote),
        "Lighthouse notes",
        Location("located", "exact", 100.0, start, start + len(quote)),
        "supports",
        True,
        "t",
        "",
        1.0,
    )


def test_a_calibration_is_read_for_its_scorer_and_only_for_it(tmp_path):
    path = tmp_path / "answering.json"
    assert Calibration.load("local-answerability", path) is None, "no file: no calibration"
    path.write_text(json.dumps({"scorers": {"local-answerability": {"slope": 4.0, "intercept": -2.0}}}))
    calibration = Calibration.load("local-answerability", path)
    assert calibration(0.5) == pytest.approx(0.5)
    assert calibration(0.0) < calibration(0.25) < calibration(1.0)
    assert calibration(-1000.0) == pytest.approx(0.0)
    assert calibration(1000.0) == pytest.approx(1.0)
    assert Calibration.load("another-scorer", path) is None


def test_the_shipped_calibration_says_how_it_was_fitted():
    fitted = json.loads(CALIBRATION_PATH.read_text())["scorers"]
    assert fitted, "bench_answering --write wrote at least one scorer's fit"
    for fit in fitted.values():
        assert fit["slope"] > 0, "a higher answer score means more likely right"
        assert fit["answers"] >= 100
        assert "bench_answering" in fit["command"]
        assert fit["squad_leave_one_article_out"]["reliability"]


def test_each_located_claim_is_read_with_its_neighbours_against_the_question():
    passage = source()
    calls = []

    def scorer(question, text, start, end):
        calls.append((question, text[start:end], window(text, start, end)))
        return 0.9 if "1844" in text[start:end] else 0.1

    claims = [located("It was completed in 1844 and is 48 metres tall.", passage), located("Its lamp was electrified in 1921.", passage)]
    lost = VerifiedClaim(
        Claim("x", 1, "not there"),
        "Lighthouse notes",
        Location("hallucinated_quote", "none", 30.0),
        "hallucinated_quote",
        False,
        "t",
        "",
        0.0,
    )
    read = read_claims("When was the lighthouse completed?", [*claims, lost], [passage], scorer, Calibration("s", 10.0, -5.0))
    assert [c[1] for c in calls] == [claims[0].claim.quote, claims[1].claim.quote], "offsets are the passage's own"
    assert calls[0][2] == PASSAGE[: PASSAGE.index(" Visitors")], "the sentence with a neighbour either side"
    assert [r.answer_score for r in read] == [0.9, 0.1, None]
    assert read[0].answers > 0.95 > 0.05 > read[1].answers
    assert read[2] == lost, "a quote that is not in its source is not read"
    assert answering(read) == read[0].answers, "an answer answers as well as its best-answering claim"
    assert answering([lost]) is None


def test_an_uncalibrated_scorer_leaves_a_raw_score_and_no_probability():
    passage = source()
    reader = AnswerReader("uncalibrated", lambda *_: 0.7, None)
    (read,) = reader.read("When?", [located("Its lamp was electrified in 1921.", passage)], [passage])
    assert (read.answer_score, read.answers) == (0.7, None)
    assert answering([read]) is None


def test_a_faithful_answer_that_does_not_answer_cannot_be_low_risk():
    passage = source()
    verified = [located("Visitors may climb it in summer.", passage)]
    weights = TrustWeights()
    backed = trust_score(retrieval=0.9, agreement=source_agreement(verified), verified=verified, refused=False, weights=weights)
    assert backed.risk == LOW, "faithfulness alone says Low"
    trust = trust_score(
        retrieval=0.9, agreement=source_agreement(verified), verified=verified, refused=False, weights=weights, answering=0.3
    )
    assert trust.confidence == backed.confidence, "confidence is the sources' backing"
    assert trust.answering == 0.3
    assert trust.risk == MEDIUM
    assert any("answers the question 30%" in reason for reason in trust.reasons)
    assert any("never Low while it may not answer" in reason for reason in trust.reasons)
    sure = trust_score(
        retrieval=0.9, agreement=source_agreement(verified), verified=verified, refused=False, weights=weights, answering=0.95
    )
    assert sure.risk == LOW, "one that answers keeps its Low"
