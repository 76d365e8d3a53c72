"""What the query API returns: the answer, its claims with verdicts and offsets, the sources, the
trust figures, why it refused if it did, the audit id — and the original designs' field names."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from apps.audits.models import AuditRecord
from apps.documents import services
from tests.factories import AuditRecordFactory, QueryRunFactory

BAKERY = "The Rye Street bakery opens at six in the morning. Its sourdough starter is fed twice a day with whole rye flour."


@pytest.fixture
def ask(personas):
    document, _ = services.document_create(
        workspace=personas.workspace_a, actor=None, filename="bakery.txt", data=BAKERY.encode(), enqueue=False
    )
    services.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key('member')}")

    def post(**body):
        response = client.post(reverse("api_queries", args=[personas.workspace_a.pk]), body, format="json")
        assert response.status_code == 201, response.content
        return response.json()

    return post


def test_an_answer_carries_its_claims_sources_trust_and_audit_record(ask):
    body = ask(query="When does the bakery on Rye Street open?")
    assert "six in the morning" in body["answer"]
    claim = body["claims"][0]
    assert claim["verdict"] == "supports"
    assert claim["quote_status"] == "located"
    assert BAKERY[claim["start"] : claim["end"]] == claim["quote"], "offsets point at the quote in the document"
    assert body["sources"][0]["title"] == "bakery"
    assert 0 < body["confidence"] <= 1
    assert body["risk"] in {"low", "medium", "high"}
    assert body["refusal"] is None
    assert AuditRecord.objects.filter(pk=body["audit_id"], query_run_id=body["id"]).exists()
    legacy = {k: body[k] for k in ("refusal_triggered", "confidence_score", "hallucination_risk", "mode")}
    assert legacy == {
        "refusal_triggered": False,
        "confidence_score": body["confidence"],
        "hallucination_risk": body["risk"].capitalize(),
        "mode": "verified",
    }


def test_a_refusal_says_who_refused_and_why(ask):
    body = ask(question="When does the bakery on Rye Street open?", threshold_override=1.0)
    assert body["refusal_triggered"] is True
    assert body["refusal"]["by"] == "gate"
    assert "below the threshold 1.000" in body["refusal"]["reason"]
    assert body["claims"] == []


def test_enable_gating_false_is_naive_mode(ask):
    body = ask(question="When does the bakery on Rye Street open?", threshold_override=1.0, enable_gating=False)
    assert body["mode"] == "naive"
    assert body["refusal"] is None


def test_the_run_list_reads_audit_ids_with_the_runs_not_a_query_per_row(personas):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {personas.token('viewer')}")
    url = reverse("api_queries", args=[personas.workspace_a.pk])

    def listing_queries() -> tuple[int, dict]:
        with CaptureQueriesContext(connection) as captured:
            body = client.get(url).json()
        return len(captured), body

    run = QueryRunFactory(workspace=personas.workspace_a)
    record = AuditRecordFactory(workspace=personas.workspace_a, query_run_id=run.pk)
    one, body = listing_queries()
    assert [(r["id"], r["audit_id"]) for r in body["results"]] == [(str(run.pk), str(record.pk))]
    for _ in range(5):
        other = QueryRunFactory(workspace=personas.workspace_a)
        AuditRecordFactory(workspace=personas.workspace_a, query_run_id=other.pk)
    six, body = listing_queries()
    assert len(body["results"]) == 6
    assert all(r["audit_id"] for r in body["results"])
    assert six == one
