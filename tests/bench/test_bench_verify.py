"""bench_verify: claims through the product's two-stage verifier, scored against gold labels."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.pipeline.types import Claim, Location, VerifiedClaim
from bench.verify import GoldClaim, verify_metrics

CORPUS = [
    {
        "id": "d1",
        "title": "Vitamin D and falls",
        "text": "Vitamin D deficiency is common in older adults. In a randomised trial of 420 adults aged over 65, daily vitamin D "
        "supplementation reduced the rate of falls by 23% over 12 months. Adverse events were rare in both groups.",
    },
    {
        "id": "d2",
        "title": "Metformin cohort",
        "text": "Cohort data were collected from 2010 to 2015 in three hospitals. Metformin users had a lower incidence of colorectal "
        "cancer than users of sulfonylureas. The analysis was adjusted for age and body mass index.",
    },
]
FALLS = "In a randomised trial of 420 adults aged over 65, daily vitamin D supplementation reduced the rate of falls by 23% over 12 months."
CLAIMS = [
    # faithful: located and supported
    ("c1", "d1", FALLS, FALLS, "supports", "verbatim"),
    ("c2", "d2", "Metformin users had a lower incidence of colorectal cancer than users of sulfonylureas.", None, "supports", "verbatim"),
    # unfaithful: a true claim with a quote that is not in its source
    (
        "c3",
        "d1",
        "Vitamin D supplementation reduced falls.",
        "Vitamin D halved hip fractures in nursing homes across Europe.",
        "supports",
        "fabricated",
    ),
    # unfaithful: located but the claim says otherwise
    ("c4", "d1", "Daily vitamin D supplementation did not reduce the rate of falls in adults over 65.", FALLS, "contradicts", "verbatim"),
    (
        "c5",
        "d1",
        "Daily vitamin D supplementation reduced the rate of falls by 32% over 12 months in adults over 65.",
        FALLS,
        "contradicts",
        "verbatim",
    ),
]


def write_inputs(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    claims = tmp_path / "claims.jsonl"
    rows = []
    for cid, source_id, claim, quote, label, status in CLAIMS:
        quote = quote or claim
        faithful = status == "verbatim" and label == "supports"
        rows.append(
            {
                "id": cid,
                "source_id": source_id,
                "claim": claim,
                "quote": quote,
                "label": label,
                "quote_status": status,
                "faithful": faithful,
            }
        )
    claims.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return corpus, claims


def test_bench_verify_reports_the_fixed_keys_and_exact_confusion_counts(tmp_path):
    corpus, claims = write_inputs(tmp_path)
    out, err = StringIO(), StringIO()
    json_path = tmp_path / "result.json"
    call_command("bench_verify", corpus=str(corpus), claims=str(claims), json_path=str(json_path), stdout=out, stderr=err)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert list(result) == [
        "n",
        "judge",
        "accuracy",
        "hallucination_precision",
        "hallucination_recall",
        "hallucination_f1",
        "verdict_accuracy",
        "confusion",
        "per_category",
        "seconds",
        "auroc",
        "ece",
        "selective",
    ]
    assert list(result["selective"]) == ["verified_precision", "verified_recall", "flagged_precision", "unsure_rate"]
    assert 0.0 <= result["selective"]["unsure_rate"] <= 1.0
    assert 0.0 <= result["ece"] <= 1.0
    assert result["n"] == 5
    assert result["judge"] == "verifier"
    assert result["confusion"] == {"tp": 3, "fp": 0, "tn": 2, "fn": 0}
    assert result["accuracy"] == 1.0
    assert result["hallucination_recall"] == 1.0
    assert result["verdict_accuracy"] == 1.0
    assert result["per_category"] == {"fabricated/supports": 1.0, "verbatim/contradicts": 1.0, "verbatim/supports": 1.0}
    assert json.loads(json_path.read_text()) == result


def test_bench_verify_has_one_local_judge_and_no_choice_of_another(tmp_path):
    corpus, claims = write_inputs(tmp_path)
    with pytest.raises(CommandError, match="unrecognized arguments"):
        call_command("bench_verify", "--corpus", str(corpus), "--claims", str(claims), "--local-judge", "features", stdout=StringIO())


def test_bench_verify_with_the_llm_judge_needs_a_provider(tmp_path, settings):
    settings.GROQ_API_KEY = settings.ZHIPUAI_API_KEY = ""
    corpus, claims = write_inputs(tmp_path)
    with pytest.raises(CommandError, match="needs an LLM provider"):
        call_command("bench_verify", corpus=str(corpus), claims=str(claims), judge="llm", stdout=StringIO())


def test_bench_verify_with_the_llm_judge_grades_through_the_router(tmp_path, fake_llm):
    contradicted = [{"item": n, "verdict": "contradicts", "rationale": "no", "confidence": 0.9} for n in (1, 2)]
    fake_llm.script("groq", {"content": json.dumps({"judgements": contradicted})})
    corpus, claims = write_inputs(tmp_path)
    out = StringIO()
    call_command("bench_verify", corpus=str(corpus), claims=str(claims), judge="llm", stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    # The two claims that are their quotes word for word are verified locally; the two the local
    # judge is unsure of go to the LLM together; the fabricated quote is never judged.
    assert result["judge"] == "llm:groq+verifier"
    assert result["confusion"] == {"tp": 3, "fp": 0, "tn": 2, "fn": 0}
    (call,) = fake_llm.calls("groq")
    prompt = call["body"]["messages"][-1]["content"]
    assert "Item 1" in prompt
    assert "Item 2" in prompt
    assert "Item 3" not in prompt


def test_bench_verify_refuses_claims_citing_documents_missing_from_the_corpus(tmp_path):
    corpus, claims = write_inputs(tmp_path)
    corpus.write_text(json.dumps(CORPUS[0]) + "\n")
    with pytest.raises(CommandError, match="d2"):
        call_command("bench_verify", corpus=str(corpus), claims=str(claims), stdout=StringIO())


def verified(verdict: str) -> VerifiedClaim:
    located = verdict != "hallucinated_quote"
    location = Location("located" if located else "hallucinated_quote", "exact" if located else "none", 100.0 if located else 0.0)
    return VerifiedClaim(Claim("c", 1, "q"), "t", location, verdict, verdict == "supports")


def gold(label: str, status: str = "verbatim") -> GoldClaim:
    return GoldClaim("id", "s", "c", "q", label, status)


def test_metrics_are_counted_by_hand():
    golds = [gold("supports"), gold("supports"), gold("contradicts"), gold("partial"), gold("supports", "fabricated"), gold("not_found")]
    predicted = [
        verified("supports"),  # tn
        verified("partial"),  # fp
        verified("contradicts"),  # tp, verdict right
        verified("supports"),  # fn
        verified("hallucinated_quote"),  # tp, verdict right
        verified("contradicts"),  # tp, verdict wrong
    ]
    result = verify_metrics(golds, predicted)
    assert result["confusion"] == {"tp": 3, "fp": 1, "tn": 1, "fn": 1}
    assert result["accuracy"] == round(4 / 6, 4)
    assert result["hallucination_precision"] == 0.75
    assert result["hallucination_recall"] == 0.75
    assert result["hallucination_f1"] == 0.75
    assert result["verdict_accuracy"] == 0.5  # c1, c3, c5
    assert result["per_category"] == {
        "fabricated/supports": 1.0,
        "verbatim/contradicts": 1.0,
        "verbatim/not_found": 1.0,
        "verbatim/partial": 0.0,
        "verbatim/supports": 0.5,
    }
