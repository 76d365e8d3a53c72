"""The settings and audit endpoints: the pages' validation, filters and streamed export."""

from __future__ import annotations

import csv
import io
import json

from django.urls import reverse
from rest_framework.test import APIClient

from apps.apikeys.services import apikey_create
from apps.audits.models import AuditEvent
from apps.workspaces.models import Role, WorkspaceSettings
from tests.factories import AuditRecordFactory, QueryRunFactory


def client_for(personas, who: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {personas.token(who)}")
    return client


def test_an_admin_patches_settings_with_the_pages_validation_and_the_change_is_audited(personas):
    url = reverse("api_settings", args=[personas.workspace_a.pk])
    admin = client_for(personas, "admin")
    response = admin.patch(url, {"gate_threshold": 0.62, "crag_lower": 0.3}, format="json")
    assert response.status_code == 200
    assert response.json()["gate_threshold"] == 0.62
    assert WorkspaceSettings.objects.get(workspace=personas.workspace_a).gate_threshold == 0.62
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="settings.update")
    assert event.data["changes"]["gate_threshold"] == {"from": 0.25, "to": 0.62}

    refused = admin.patch(url, {"crag_lower": 0.9}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["details"] == {"crag_lower": [refused.json()["error"]["message"]]}
    assert "must not be above the upper one" in refused.json()["error"]["message"]
    unknown = admin.patch(url, {"secret_sauce": 1}, format="json")
    assert unknown.status_code == 400
    assert "secret_sauce" in unknown.json()["error"]["details"]
    assert WorkspaceSettings.objects.get(workspace=personas.workspace_a).crag_lower == 0.3, "a refused change saves nothing"


def test_a_key_changing_settings_is_named_in_the_change_history(personas):
    _, secret = apikey_create(workspace=personas.workspace_a, actor=None, name="tuner", role=Role.ADMIN)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    response = client.patch(reverse("api_settings", args=[personas.workspace_a.pk]), {"rerank_top_n": 4}, format="json")
    assert response.status_code == 200
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="settings.update")
    assert event.actor is None
    assert event.data["actor_label"].startswith("key:")


def test_the_audit_list_filters_and_the_export_streams_what_the_filters_select(personas):
    a = personas.workspace_a
    for question, risk in [("How tall is the lighthouse?", "low"), ("Who baked the bread?", "high")]:
        run = QueryRunFactory(workspace=a, question=question, risk=risk)
        AuditRecordFactory(workspace=a, query_run_id=run.pk, payload={"question": question, "mode": "verified", "trust": {"risk": risk}})
    viewer = client_for(personas, "viewer")
    url = reverse("api_audits", args=[a.pk])
    everything = viewer.get(url).json()
    assert everything["count"] == 2
    high = viewer.get(url, {"risk": "high"}).json()
    assert high["count"] == 1
    assert viewer.get(url, {"q": "lighthouse"}).json()["count"] == 1
    bad = viewer.get(url, {"risk": "purple"})
    assert bad.status_code == 400
    assert bad.json()["error"]["details"]["risk"]

    record_id = high["results"][0]["id"]
    detail = viewer.get(reverse("api_audit", args=[a.pk, record_id])).json()
    assert detail["payload"]["question"] == "Who baked the bread?"
    assert detail["link_ok"] is True

    exported = viewer.get(reverse("api_audits_export", args=[a.pk, "csv"]), {"risk": "high"})
    assert exported.status_code == 200
    assert exported.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert [r["question"] for r in rows] == ["Who baked the bread?"]
    as_json = viewer.get(reverse("api_audits_export", args=[a.pk, "json"]))
    assert len(json.loads(b"".join(as_json.streaming_content))) == 2
    assert AuditEvent.objects.filter(workspace=a, action__startswith="audit.export").count() == 2
