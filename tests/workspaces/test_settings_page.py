"""The workspace settings page and the settings_update service behind it (and the API's PATCH)."""

from __future__ import annotations

import html
import importlib

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from apps.audits.models import AuditEvent
from apps.core.errors import ApplicationError
from apps.documents import services as documents
from apps.workspaces.models import WorkspaceSettings
from apps.workspaces.services import SETTINGS, settings_update


def url() -> str:
    return reverse("workspace_settings", args=["acme"])


def current(personas) -> dict:
    options = WorkspaceSettings.objects.get(workspace=personas.workspace_a)
    return {name: getattr(options, name) for name in SETTINGS}


def post(client, personas, **changes):
    """The whole form as the page sends it: every current value, some changed."""
    data = current(personas) | changes
    data = {k: ("on" if v is True else "" if v is False else v) for k, v in data.items()}
    return client.post(url(), {k: v for k, v in data.items() if v != ""})


def page_text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owner_and_admin_change_settings_and_the_history_shows_from_and_to(personas, who):
    client = personas.client(who)
    response = post(client, personas, gate_threshold=0.6, crag_upper=0.7, web_search_enabled=True)
    assert response.status_code == 302
    assert current(personas) | {"gate_threshold": 0.6, "crag_upper": 0.7, "web_search_enabled": True} == current(personas)
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="settings.update")
    assert event.actor == getattr(personas, who).user
    assert event.data["changes"] == {
        "gate_threshold": {"from": 0.25, "to": 0.6},
        "crag_upper": {"from": 0.55, "to": 0.7},
        "web_search_enabled": {"from": False, "to": True},
    }
    page = page_text(client.get(url()))
    assert "Settings saved." in page
    assert "gate threshold: 0.25 → 0.6" in page
    assert "crag upper: 0.55 → 0.7" in page
    assert "web search enabled: off → on" in page
    assert f"<td>{getattr(personas, who).user.username}</td>" in page


def test_every_setting_is_on_the_page_with_its_value(personas):
    page = page_text(personas.client("admin").get(url()))
    for name, value in current(personas).items():
        if isinstance(value, bool):
            assert f'name="{name}"' in page
        else:
            assert f'name="{name}" value="{value}"' in page, name
    assert reverse("providers", args=["acme"]) in page, "provider order and keys are one link away"


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"gate_threshold": 1.5}, "gate_threshold", "Gate threshold must be between 0 and 1; 1.5 is not."),
        ({"locator_threshold": 101}, "locator_threshold", "Quote locator threshold must be between 0 and 100; 101 is not."),
        ({"crag_lower": 0.6}, "crag_lower", "The CRAG lower threshold (0.6) must not be above the upper one (0.55)."),
        ({"crag_upper": 0.3}, "crag_upper", "The CRAG lower threshold (0.35) must not be above the upper one (0.3)."),
        ({"risk_medium_cutoff": 0.8}, "risk_medium_cutoff", "Medium risk must start at or below where Low risk starts (0.8 > 0.75)."),
        (
            {"trust_weight_retrieval": 0, "trust_weight_agreement": 0, "trust_weight_grounding": 0},
            "trust_weight_retrieval",
            "At least one trust weight must be above 0: the confidence is their weighted mean.",
        ),
        ({"chunk_overlap": 800}, "chunk_overlap", "The chunk overlap (800) must be smaller than the chunk size (800)."),
        ({"chunk_size": 100}, "chunk_size", "The chunk overlap (120) must be smaller than the chunk size (100)."),
        ({"dense_k": 0}, "dense_k", "Dense candidates must be between 1 and 200; 0 is not."),
        ({"dense_weight": 0, "keyword_weight": 0}, "dense_weight", "At least one retrieval leg needs a weight above 0."),
        ({"ocr_language": "zzz"}, "ocr_language", "OCR language: this server's Tesseract has no “zzz”; it has eng."),
        (
            {"ocr_language": "../eng"},
            "ocr_language",
            "OCR language must be Tesseract language codes such as “eng” or “deu+eng”, not “../eng”.",
        ),
    ],
)
def test_a_bad_value_is_refused_with_a_clear_message_beside_its_field_and_nothing_is_saved(personas, changes, field, message):
    before = current(personas)
    response = post(personas.client("owner"), personas, **changes)
    assert response.status_code == 400
    page = page_text(response)
    assert f'<ul class="errorlist" id="id_{field}_error"><li>{message}</li></ul>' in page
    assert current(personas) == before
    assert not AuditEvent.objects.filter(action="settings.update").exists()


def test_a_value_that_is_not_a_number_is_refused_by_the_form(personas):
    response = post(personas.client("owner"), personas, rrf_k="sixty")
    assert response.status_code == 400
    assert "Enter a whole number." in page_text(response)


def test_saving_without_changes_records_nothing(personas):
    client = personas.client("owner")
    assert post(client, personas).status_code == 302
    assert "Nothing to save: no value was changed." in page_text(client.get(url()))
    assert not AuditEvent.objects.filter(action="settings.update").exists()


def test_members_and_viewers_see_the_settings_read_only_and_cannot_change_them(personas):
    for who in ("member", "viewer"):
        client = personas.client(who)
        page = page_text(client.get(url()))
        assert "Only owners and admins change these settings; you see them read-only." in page
        assert 'name="gate_threshold" value="0.25" step="any" required disabled' in page
        assert "Save settings" not in page
        assert post(client, personas, gate_threshold=0.9).status_code == 403
    assert current(personas)["gate_threshold"] == 0.25


def test_changing_the_chunking_asks_for_a_reindex_until_documents_are_reindexed(personas):
    document, _ = documents.document_create(workspace=personas.workspace_a, actor=None, filename="a.txt", data=b"Some text.", enqueue=False)
    documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    client = personas.client("admin")
    assert "Re-index to apply the new chunking" not in page_text(client.get(url()))
    assert post(client, personas, chunk_size=600, chunk_overlap=90).status_code == 302
    page = page_text(client.get(url()))
    assert "Re-index to apply the new chunking" in page
    assert reverse("documents_reindex_all", args=["acme"]) in page
    assert "documents need a re-index" in page
    client.post(reverse("documents_reindex_all", args=["acme"]))
    assert "Re-index to apply the new chunking" not in page_text(client.get(url()))


def test_the_service_takes_api_style_values_and_names_the_field_at_fault(personas):
    options = settings_update(
        workspace=personas.workspace_a, actor=personas.admin, changes={"dense_k": 12, "rrf_k": 40.0, "gate_threshold": 1}
    )
    assert (options.dense_k, options.rrf_k, options.gate_threshold) == (12, 40, 1.0)
    for changes, field, message in [
        ({"provider_order": "groq"}, "provider_order", "“provider_order” is not a setting that can be changed here."),
        ({"web_search_enabled": "yes"}, "web_search_enabled", "Web search must be on or off (true or false)."),
        ({"dense_k": 2.5}, "dense_k", "Dense candidates must be a whole number."),
        ({"gate_threshold": float("nan")}, "gate_threshold", "Gate threshold must be a number."),
        ({"keyword_k": True}, "keyword_k", "Keyword candidates must be a whole number, not true or false."),
        ({"dense_k": "5"}, "dense_k", "Dense candidates must be a whole number, not text."),
        ({"gate_threshold": "0.5"}, "gate_threshold", "Gate threshold must be a number, not text."),
    ]:
        with pytest.raises(ApplicationError) as caught:
            settings_update(workspace=personas.workspace_a, actor=personas.admin, changes=changes)
        assert (caught.value.field, caught.value.message) == (field, message)
    with pytest.raises(PermissionDenied):
        settings_update(workspace=personas.workspace_a, actor=personas.member, changes={"dense_k": 5})
    assert WorkspaceSettings.objects.get(workspace=personas.workspace_a).dense_k == 12


def test_the_ocr_language_is_changed_through_the_api_and_audited(personas):
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key('admin')}")
    settings_url = reverse("api_settings", args=[personas.workspace_a.pk])
    assert api.get(settings_url).json()["ocr_language"] == "eng"
    refused = api.patch(settings_url, {"ocr_language": 7}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["message"].startswith("OCR language must be text, not ")
    changed = api.patch(settings_url, {"ocr_language": "eng+eng"}, format="json")
    assert changed.status_code == 200
    assert changed.json()["ocr_language"] == "eng+eng"
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="settings.update")
    assert event.data["changes"] == {"ocr_language": {"from": "eng", "to": "eng+eng"}}


def test_the_gate_threshold_migration_moves_workspaces_at_the_old_default_and_keeps_a_chosen_one(personas):
    from django.apps import apps

    migration = importlib.import_module("apps.workspaces.migrations.0008_gate_threshold_names")
    WorkspaceSettings.objects.filter(workspace=personas.workspace_a).update(gate_threshold=migration.OLD_DEFAULT)
    WorkspaceSettings.objects.filter(workspace=personas.workspace_b).update(gate_threshold=0.4)
    migration.move_default(apps, None)
    assert WorkspaceSettings.objects.get(workspace=personas.workspace_a).gate_threshold == migration.NEW_DEFAULT == 0.25
    assert WorkspaceSettings.objects.get(workspace=personas.workspace_b).gate_threshold == 0.4
    migration.move_back(apps, None)
    assert WorkspaceSettings.objects.get(workspace=personas.workspace_a).gate_threshold == 0.26


def test_the_trust_weights_migration_moves_workspaces_at_the_old_defaults_and_keeps_chosen_ones(personas):
    from django.apps import apps

    migration = importlib.import_module("apps.workspaces.migrations.0009_trust_weights_evidence")
    old = dict(zip(migration.FIELDS, (0.4, 0.3, 0.3), strict=True))
    WorkspaceSettings.objects.filter(workspace=personas.workspace_a).update(**old)
    WorkspaceSettings.objects.filter(workspace=personas.workspace_b).update(**{**old, "trust_weight_grounding": 0.5})

    def weights(workspace):
        return WorkspaceSettings.objects.values_list(*migration.FIELDS).get(workspace=workspace)

    migration.move_defaults(apps, None)
    assert weights(personas.workspace_a) == (0.2, 0.4, 0.4)
    assert weights(personas.workspace_b) == (0.4, 0.3, 0.5)
    migration.move_back(apps, None)
    assert weights(personas.workspace_a) == (0.4, 0.3, 0.3)


def test_the_reindex_notice_follows_each_document_s_own_chunking(personas):
    """The notice reads the chunking each document was cut with (stored on it), not the audit
    trail: changing the chunking and changing it back asks for nothing."""
    document, _ = documents.document_create(workspace=personas.workspace_a, actor=None, filename="a.txt", data=b"Some text.", enqueue=False)
    indexed = documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    assert (indexed.indexed_chunk_size, indexed.indexed_chunk_overlap) == (800, 120)
    client = personas.client("admin")
    post(client, personas, chunk_size=600, chunk_overlap=90)
    assert "Re-index to apply the new chunking" in page_text(client.get(url()))
    post(client, personas, chunk_size=800, chunk_overlap=120)
    assert "Re-index to apply the new chunking" not in page_text(client.get(url()))


def test_the_judge_target_precision_says_what_it_means_and_refuses_what_is_out_of_range(personas):
    client = personas.client("owner")
    page = page_text(client.get(url()))
    assert "Judge target precision" in page
    assert "of the development claims (SciFact, HealthVer) would be unsure" in page
    assert post(client, personas, judge_target_precision=0.8).status_code == 302
    assert WorkspaceSettings.objects.get(workspace=personas.workspace_a).judge_target_precision == 0.8
    assert "At 0.80," in page_text(client.get(url()))
    for bad in (0.3, 1.0):
        response = post(client, personas, judge_target_precision=bad)
        assert response.status_code == 400
        assert WorkspaceSettings.objects.get(workspace=personas.workspace_a).judge_target_precision == 0.8, "nothing saved"


def test_the_judge_target_precision_is_changed_through_the_api_and_a_value_out_of_range_is_refused(personas):
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key('admin')}")
    settings_url = reverse("api_settings", args=[personas.workspace_a.pk])
    assert api.get(settings_url).json()["judge_target_precision"] == 0.95
    refused = api.patch(settings_url, {"judge_target_precision": 1.0}, format="json")
    assert refused.status_code == 400
    assert "Judge target precision" in refused.json()["error"]["message"]
    assert api.patch(settings_url, {"judge_target_precision": 0.9}, format="json").json()["judge_target_precision"] == 0.9
    viewer = APIClient()
    viewer.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key('viewer')}")
    assert viewer.patch(settings_url, {"judge_target_precision": 0.8}, format="json").status_code == 403
    assert WorkspaceSettings.objects.get(workspace=personas.workspace_a).judge_target_precision == 0.9
