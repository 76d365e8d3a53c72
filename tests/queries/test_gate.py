"""The confidence gate: verified mode refuses weak evidence without generating; naive mode answers."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.audits.models import AuditRecord
from apps.documents import services
from apps.pipeline.gate import REFUSAL, confidence_gate
from apps.queries.models import QueryRun
from apps.queries.services import query_answer

BAKERY = "The Rye Street bakery opens at six in the morning. Its sourdough starter is fed twice a day with whole rye flour."
OFF_TOPIC = "What is the orbital period of Neptune's moon Triton?"


@pytest.fixture
def bakery(personas):
    document, _ = services.document_create(
        workspace=personas.workspace_a, actor=None, filename="bakery.txt", data=BAKERY.encode(), enqueue=False
    )
    services.document_ingest(workspace=personas.workspace_a, document_id=document.pk)


def test_gate_decisions():
    assert confidence_gate([0.2, 0.5], threshold=0.4, enabled=True).passed
    refused = confidence_gate([0.2, 0.3], threshold=0.4, enabled=True)
    assert not refused.passed
    assert refused.top_score == 0.3
    assert "below the threshold 0.400" in refused.reason
    assert not confidence_gate([], threshold=0.4, enabled=True).passed
    assert confidence_gate([0.0], threshold=0.4, enabled=False).passed
    unanswerable = confidence_gate([0.8], threshold=0.4, enabled=True, answerability=0.1)
    assert not unanswerable.passed
    assert unanswerable.top_score == 0.1
    assert unanswerable.reason == "answerability 0.100 is below the threshold 0.400 (relevance 0.800, answerability 0.100)"
    both = confidence_gate([0.8], threshold=0.4, enabled=True, answerability=0.6)
    assert both.passed
    assert both.top_score == 0.6
    assert both.relevance == 0.8


def test_verified_mode_refuses_an_off_topic_question_without_generating(personas, bakery):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=OFF_TOPIC)
    assert run.answer == REFUSAL
    assert run.insufficient
    assert run.provider == "gate"
    assert run.claims == []
    assert run.gate["passed"] is False
    payload = AuditRecord.objects.get(query_run_id=run.pk).payload
    best = max(s["score"] for s in payload["rerank"]["scores"])
    assert payload["corrective"]["verdict"] == "incorrect"
    assert payload["gate"]["reason"].startswith(f"retrieval was incorrect: the best relevance {best:.3f} is below the lower threshold")
    assert payload["provider_attempts"] == []
    assert "generate" not in payload["timings_ms"]


def test_naive_mode_skips_the_gate(personas, bakery):
    run = query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="When does the bakery on Rye Street open?", mode="naive"
    )
    assert run.gate["enabled"] is False
    assert run.provider == "local"
    assert "six in the morning" in run.answer


def test_an_answerable_question_passes_the_gate(personas, bakery):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question="When does the bakery on Rye Street open?")
    assert run.gate["passed"] is True
    assert "six in the morning" in run.answer


def test_api_takes_a_threshold_override_and_enable_gating(personas, bakery):
    client = personas.client("member")
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    question = {"question": "When does the bakery on Rye Street open?"}
    strict = client.post(url, question | {"threshold_override": 1.0}, content_type="application/json").json()
    assert strict["insufficient"] is True
    assert strict["gate"]["threshold"] == 1.0
    assert strict["gate"]["top_score"] == min(strict["gate"]["relevance"], strict["gate"]["answerability"])
    naive = client.post(url, question | {"threshold_override": 1.0, "enable_gating": False}, content_type="application/json").json()
    assert naive["mode"] == "naive"
    assert naive["insufficient"] is False


@pytest.mark.parametrize("bad", [1.5, -0.1, "high"])
def test_api_refuses_a_threshold_override_out_of_range(personas, bad):
    response = personas.client("member").post(
        reverse("api_queries", args=[personas.workspace_a.pk]),
        {"question": "Anything?", "threshold_override": bad},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "threshold_override" in response.json()["error"]["details"]
    assert not QueryRun.objects.exists()


def test_the_answer_page_says_why_it_refused(personas, bakery):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=OFF_TOPIC)
    page = personas.client("viewer").get(reverse("answer", args=["acme", run.pk])).content.decode()
    assert "Refused by the corrective step: no passage was relevant enough to keep" in page
    assert "is below the lower threshold" in page
    assert "against the lower corrective threshold" in page


def test_a_relevant_passage_that_does_not_answer_is_refused_on_answerability(personas, bakery):
    """The passage is about the right bakery, and relevant, but names another street: the
    question read as a claim is not supported, so the gate refuses on answerability."""
    asked = {"workspace": personas.workspace_a, "actor": personas.member, "threshold_override": 0.5}
    answered = query_answer(**asked, question="When does the bakery on Rye Street open?")
    assert answered.gate["passed"] is True
    assert answered.gate["answerability"] >= 0.5
    assert answered.gate["relevance"] >= 0.5
    assert answered.gate["top_score"] == min(answered.gate["answerability"], answered.gate["relevance"])

    refused = query_answer(**asked, question="When does the bakery on Elm Street open?")
    gate = refused.gate
    assert refused.answer == REFUSAL
    assert refused.provider == "gate"
    assert gate["relevance"] >= 0.5 > gate["answerability"]
    assert gate["top_score"] == gate["answerability"]
    assert gate["reason"].startswith(f"answerability {gate['answerability']:.3f} is below the threshold 0.500")
    payload = AuditRecord.objects.get(query_run_id=refused.pk).payload
    assert payload["gate"]["answerability"] == gate["answerability"]
    assert "answerability" in payload["timings_ms"]


def test_naive_mode_does_not_judge_answerability(personas, bakery):
    run = query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="When does the bakery on Elm Street open?", mode="naive"
    )
    assert run.gate["answerability"] is None
    assert run.insufficient is False
