"""The trust score's components and risk rules, and bench_trust on a tiny HaluEval file."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from apps.pipeline.trust import HIGH, LOW, MEDIUM, REFUSED, TrustWeights, source_agreement, trust_score
from apps.pipeline.types import Claim, Location, VerifiedClaim
from apps.workspaces.models import Workspace

LOCATED = Location("located", "exact", 100.0, 0, 10)
MISSING = Location("hallucinated_quote", "none", 40.0)


def claim(verdict: str, score: float = 0.9, location: Location = LOCATED) -> VerifiedClaim:
    return VerifiedClaim(Claim("c", 1, "q"), "doc", location, verdict, verdict == "supports" and location is LOCATED, "local", "", score)


def test_confidence_is_the_weighted_mean_of_the_three_components():
    verified = [claim("supports", 1.0), claim("supports", 0.8)]
    trust = trust_score(retrieval=0.7, agreement=source_agreement(verified), verified=verified, refused=False, weights=TrustWeights())
    assert trust.agreement == pytest.approx(0.9)
    assert trust.grounding == 1.0
    assert trust.confidence == pytest.approx(0.2 * 0.7 + 0.4 * 0.9 + 0.4 * 1.0)
    assert trust.risk == LOW


def test_agreement_counts_a_missing_quote_as_no_support_and_a_rejection_as_its_remaining_belief():
    assert source_agreement([claim("supports", 0.9), claim("contradicts", 0.7), claim("supports", 1.0, MISSING)]) == pytest.approx(
        (0.9 + 0.3 + 0) / 3
    )


@pytest.mark.parametrize("unsafe", ["hallucinated_quote", "contradicts"])
def test_an_answer_with_a_fabricated_or_contradicted_claim_is_never_low_risk(unsafe):
    verified = [claim("supports", 1.0)] * 9 + [claim(unsafe, 0.0, MISSING if unsafe == "hallucinated_quote" else LOCATED)]
    trust = trust_score(
        retrieval=1.0, agreement=1.0, verified=verified, refused=False, weights=TrustWeights(low_cutoff=0.5, medium_cutoff=0.2)
    )
    assert trust.confidence >= 0.5, "the numbers alone would say Low"
    assert trust.risk == MEDIUM
    assert any("never Low" in reason for reason in trust.reasons)


def test_risk_follows_the_workspace_cut_offs():
    verified = [claim("supports", 0.6)]
    weights = TrustWeights(low_cutoff=0.9, medium_cutoff=0.8)
    assert trust_score(retrieval=0.5, agreement=0.6, verified=verified, refused=False, weights=weights).risk == HIGH
    assert (
        trust_score(
            retrieval=0.6, agreement=0.6, verified=verified, refused=False, weights=TrustWeights(low_cutoff=0.9, medium_cutoff=0.6)
        ).risk
        == MEDIUM
    )


def test_a_refusal_claims_nothing_so_it_has_no_confidence_and_no_risk_label():
    trust = trust_score(retrieval=0.2, agreement=0.0, verified=[], refused=True, weights=TrustWeights())
    assert (trust.confidence, trust.agreement, trust.grounding, trust.risk) == (None, None, None, REFUSED)
    assert trust.retrieval == 0.2, "the best relevance stays, as evidence"


def test_bench_trust_scores_right_answers_above_hallucinated_ones(db, tmp_path):
    items = [
        {
            "knowledge": "The Oberoi Group is a hotel company with its head office in Delhi.",
            "question": "The Oberoi family is part of a hotel company that has a head office in what city?",
            "right_answer": "Delhi",
            "hallucinated_answer": "Mumbai, the financial capital of India.",
        },
        {
            "knowledge": "Skerryvore is a lighthouse off the west coast of Scotland. The tower is 48 metres tall.",
            "question": "How tall is the Skerryvore lighthouse?",
            "right_answer": "The tower is 48 metres tall.",
            "hallucinated_answer": "The tower is 61 metres tall and was painted red in 1901.",
        },
    ]
    path = tmp_path / "halueval.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in items))
    out = StringIO()
    call_command("bench_trust", "--halueval", str(path), stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert set(result) >= {"n", "auroc", "auroc_baseline", "risk_counts"}
    assert result["n"] == 2
    assert result["auroc"] == 1.0
    assert sum(result["risk_counts"]["right"].values()) == sum(result["risk_counts"]["hallucinated"].values()) == 2
    assert not Workspace.objects.filter(slug__startswith="bench-trust").exists(), "temporary workspaces are removed"
