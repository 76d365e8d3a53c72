"""Workspace API keys: shown once, stored hashed, scoped to one workspace and one role,
revocable, their use noted and named in the audit trail."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from apps.apikeys.models import ApiKey
from apps.audits.models import AuditEvent, AuditRecord
from apps.documents import services as documents
from apps.workspaces.models import Membership, Role

BAKERY = "The Rye Street bakery opens at six in the morning. Its sourdough starter is fed twice a day with whole rye flour."


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def create_key(personas, who: str = "admin", **body) -> dict:
    response = personas.client(who).post(
        reverse("api_keys", args=[personas.workspace_a.pk]), {"name": "CI", "role": "member"} | body, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_a_new_key_is_shown_once_and_stored_only_as_a_hash(personas):
    created = create_key(personas)
    secret = created["key"]
    assert secret.startswith(created["prefix"] + "_")
    assert len(secret) > 50
    listed = personas.client("admin").get(reverse("api_keys", args=[personas.workspace_a.pk])).json()["results"]
    assert "key" not in listed[0]
    assert listed[0]["prefix"] == created["prefix"]
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f'SELECT count(*) FROM "{table}" AS t WHERE strpos(t::text, %s) > 0', [secret[-20:]])
            assert cursor.fetchone()[0] == 0, f"the secret is stored in {table}"


def test_a_key_acts_in_its_workspace_with_its_role(personas):
    viewer_key = bearer(create_key(personas, role="viewer")["key"])
    documents_url = reverse("api_documents", args=[personas.workspace_a.pk])
    assert viewer_key.get(documents_url).status_code == 200
    refused = viewer_key.post(reverse("api_queries", args=[personas.workspace_a.pk]), {"question": "Hi?"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"


def test_a_key_is_an_outsider_in_every_other_workspace(personas):
    secret = create_key(personas, role="admin")["key"]
    response = bearer(secret).get(reverse("api_documents", args=[personas.workspace_b.pk]))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_an_admin_key_cannot_make_owners_nor_touch_them(personas):
    client = bearer(create_key(personas, role="admin")["key"])
    members = reverse("api_members", args=[personas.workspace_a.pk])
    promoted = client.patch(reverse("api_member", args=[personas.workspace_a.pk, personas.member.pk]), {"role": "owner"}, format="json")
    assert promoted.status_code == 403
    demoted = client.patch(reverse("api_member", args=[personas.workspace_a.pk, personas.owner.pk]), {"role": "viewer"}, format="json")
    assert demoted.status_code == 403
    assert client.get(members).status_code == 200
    assert Membership.objects.get(pk=personas.owner.pk).role == Role.OWNER


def test_no_key_can_be_an_owner_and_members_cannot_create_keys(personas):
    owner_key = personas.client("owner").post(
        reverse("api_keys", args=[personas.workspace_a.pk]), {"name": "root", "role": "owner"}, content_type="application/json"
    )
    assert owner_key.status_code == 400
    assert "role" in owner_key.json()["error"]["details"]
    by_member = personas.client("member").post(
        reverse("api_keys", args=[personas.workspace_a.pk]), {"name": "mine", "role": "viewer"}, content_type="application/json"
    )
    assert by_member.status_code == 403
    assert not ApiKey.objects.exists()


def test_using_a_key_notes_when_it_was_last_used(personas):
    created = create_key(personas)
    assert created["last_used_at"] is None
    bearer(created["key"]).get(reverse("api_documents", args=[personas.workspace_a.pk]))
    used = ApiKey.objects.get(pk=created["id"]).last_used_at
    assert used is not None
    assert timezone.now() - used < timedelta(seconds=30)


def test_a_revoked_key_stops_working_and_both_ends_of_its_life_are_audited(personas):
    created = create_key(personas)
    client = bearer(created["key"])
    url = reverse("api_documents", args=[personas.workspace_a.pk])
    assert client.get(url).status_code == 200
    revoke = personas.client("admin").delete(reverse("api_key", args=[personas.workspace_a.pk, created["id"]]))
    assert revoke.status_code == 204
    refused = client.get(url)
    assert refused.status_code == 401
    assert refused.json()["error"] == {"code": "authentication_failed", "message": "Unknown or revoked API key.", "details": None}
    assert refused["WWW-Authenticate"].startswith("Bearer")
    events = AuditEvent.objects.filter(workspace=personas.workspace_a, action__startswith="apikey.").order_by("created_at")
    assert [(e.action, e.actor.username, e.data["key"]) for e in events] == [
        ("apikey.create", "adam", created["prefix"]),
        ("apikey.revoke", "adam", created["prefix"]),
    ]
    listed = personas.client("admin").get(reverse("api_key", args=[personas.workspace_a.pk, created["id"]])).json()
    assert listed["active"] is False
    assert listed["revoked_at"]


def test_what_a_key_does_is_recorded_under_its_prefix_and_name(personas):
    created = create_key(personas, name="nightly import")
    label = f"key:{created['prefix']} (nightly import)"
    client = bearer(created["key"])
    document, _ = documents.document_create(
        workspace=personas.workspace_a, actor=None, filename="bakery.txt", data=BAKERY.encode(), enqueue=False
    )
    documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)

    answer = client.post(reverse("api_queries", args=[personas.workspace_a.pk]), {"question": "When does the bakery open?"}, format="json")
    assert answer.status_code == 201
    assert answer.json()["asked_by"] == label
    assert AuditRecord.objects.get(pk=answer.json()["audit_id"]).actor_label == label
    assert client.delete(reverse("api_document", args=[personas.workspace_a.pk, document.pk])).status_code == 204
    deleted = AuditEvent.objects.get(workspace=personas.workspace_a, action="document.delete")
    assert deleted.actor is None
    assert deleted.data["actor_label"] == label


def test_the_label_of_a_key_does_not_leak_into_the_next_request(personas):
    bearer(create_key(personas, role="admin")["key"]).post(reverse("api_documents_reindex", args=[personas.workspace_a.pk]))
    personas.client("admin").post(reverse("api_documents_reindex", args=[personas.workspace_a.pk]))
    by_person = AuditEvent.objects.filter(action="document.reindex", actor__username="adam").get()
    assert "actor_label" not in by_person.data


def test_create_api_key_command_prints_a_key_that_works(personas, capsys):
    call_command("create_api_key", "--workspace", "acme", "--role", "viewer", "--name", "backup job")
    secret = capsys.readouterr().out.strip()
    assert bearer(secret).get(reverse("api_documents", args=[personas.workspace_a.pk])).status_code == 200
    key = ApiKey.objects.get()
    assert (key.name, key.role, key.created_by) == ("backup job", "viewer", None)
    assert AuditEvent.objects.get(action="apikey.create").data["via"] == "manage.py create_api_key"


def test_create_api_key_command_refuses_an_unknown_workspace(db):
    with pytest.raises(Exception, match="No workspace"):
        call_command("create_api_key", "--workspace", "nowhere", "--role", "viewer")


def test_the_api_keys_page_shows_a_new_key_once_and_revokes(personas):
    client = personas.client("admin")
    url = reverse("api_keys_page", args=["acme"])
    page = client.post(url, {"name": "CI upload job", "role": "member"})
    assert page.status_code == 200
    key = ApiKey.objects.get()
    html = page.content.decode()
    secret = html.split('<code class="secret">')[1].split("</code>")[0]
    assert secret.startswith(key.prefix)
    assert "no-store" in page["Cache-Control"]
    again = client.get(url).content.decode()
    assert key.prefix in again
    assert secret not in again
    assert client.post(reverse("api_key_revoke", args=["acme", key.pk])).status_code == 302
    assert "revoked" in client.get(url).content.decode()
    assert bearer(secret).get(reverse("api_documents", args=[personas.workspace_a.pk])).status_code == 401


@pytest.mark.parametrize("who", ["member", "viewer"])
def test_only_admins_see_the_api_keys_page(personas, who):
    assert personas.client(who).get(reverse("api_keys_page", args=["acme"])).status_code == 403
    assert "API keys" not in personas.client(who).get(reverse("documents", args=["acme"])).content.decode()
    assert "API keys" in personas.client("admin").get(reverse("documents", args=["acme"])).content.decode()
