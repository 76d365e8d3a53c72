"""LOCAL_JUDGE picks the local judge of every answer: the feature judge (the default),
or TrustRAG's own verifier, named in each claim and used for the gate's answerability."""

from __future__ import annotations

import pytest

from apps.queries.services import query_answer
from tests.queries.test_generation import lighthouse  # noqa: F401 - the fixture


def ask(personas):
    return query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="How tall is the Skerryvore lighthouse?", threshold_override=0
    )


@pytest.mark.parametrize(("choice", "name"), [("features", "local"), ("verifier", "verifier")])
def test_the_configured_local_judge_grades_the_claims_and_the_gate(personas, lighthouse, settings, choice, name):  # noqa: F811
    settings.LOCAL_JUDGE = choice
    run = ask(personas)
    assert run.claims, run.answer
    assert {claim["judge"] for claim in run.claims} == {name}
    assert 0.0 <= run.gate["answerability"] <= 1.0
    assert all(claim["quote_status"] == "located" for claim in run.claims)
