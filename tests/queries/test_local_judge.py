"""The local judge is TrustRAG's trained verifier: it grades every claim no LLM grades, reads the
gate's answerability and picks the local provider's sentences, and each claim names it."""

from __future__ import annotations

from apps.queries.services import local_judge_get, query_answer
from tests.queries.test_generation import lighthouse  # noqa: F401 - the fixture


def test_the_verifier_grades_the_claims_and_the_gate(personas, lighthouse):  # noqa: F811
    run = query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="How tall is the Skerryvore lighthouse?", threshold_override=0
    )
    assert run.claims, run.answer
    assert {claim["judge"] for claim in run.claims} == {"verifier"}
    assert all(claim["quote_status"] == "located" for claim in run.claims)
    assert 0.0 <= run.gate["answerability"] <= 1.0
    judge = local_judge_get()
    assert judge.name == "verifier"
    assert local_judge_get() is judge, "loaded once per process"
