from __future__ import annotations

from django.urls import reverse

from apps.workspaces.models import Membership, Role, Workspace, WorkspaceSettings
from tests.factories import AuditRecordFactory


def test_creator_of_a_workspace_becomes_its_owner(personas):
    client = personas.client("member")
    response = client.post(reverse("workspace_list"), {"name": "Field Notes"})
    assert response.status_code == 302
    workspace = Workspace.objects.get(slug="field-notes")
    assert Membership.objects.get(workspace=workspace, user=personas.member.user).role == Role.OWNER
    assert WorkspaceSettings.objects.filter(workspace=workspace).exists()
    assert response["Location"] == reverse("ask", args=["field-notes"])


def test_a_taken_slug_is_refused_with_a_message(personas):
    response = personas.client("member").post(reverse("workspace_list"), {"name": "Another", "slug": "acme"})
    assert response.status_code == 400
    assert "is taken" in response.content.decode()
    assert Workspace.objects.filter(slug="acme").count() == 1


def test_a_name_without_letters_is_refused(personas):
    response = personas.client("member").post(reverse("workspace_list"), {"name": "!!!"})
    assert response.status_code == 400
    assert "letter or digit" in response.content.decode()


def test_switcher_lists_the_users_workspaces(personas):
    page = personas.client("owner").get(reverse("ask", args=["acme"])).content.decode()
    assert reverse("ask", args=["acme"]) in page
    assert "Beta Labs" not in page


def test_login_and_logout(personas, password, client):
    response = client.post(reverse("login"), {"username": "olivia", "password": password})
    assert response.status_code == 302
    assert response["Location"] == reverse("workspace_list")
    assert client.get(reverse("workspace_list")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("workspace_list")).status_code == 302


def test_wrong_password_is_refused(personas, client):
    response = client.post(reverse("login"), {"username": "olivia", "password": "nope"})
    assert response.status_code == 200
    assert "correct username and password" in response.content.decode()


def test_deleting_a_workspace_removes_everything_in_it_audit_trail_included(personas, django_capture_on_commit_callbacks):

    from django.core.files.storage import default_storage

    from apps.audits.models import AuditRecord
    from apps.documents.models import Document
    from apps.documents.services import document_create
    from apps.workspaces.services import workspace_delete

    document, _ = document_create(workspace=personas.workspace_a, actor=None, filename="a.txt", data=b"Some text.", enqueue=False)
    AuditRecordFactory(workspace=personas.workspace_a, payload={})
    AuditRecordFactory(workspace=personas.workspace_b, payload={})
    with django_capture_on_commit_callbacks(execute=True):
        workspace_delete(workspace=personas.workspace_a, actor=None)
    assert not Workspace.objects.filter(slug="acme").exists()
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not default_storage.exists(document.file.name)
    assert AuditRecord.objects.count() == 1, "the other workspace's trail is untouched"
    assert AuditRecord.objects.get().workspace_id == personas.workspace_b.pk


def test_a_benchmark_stopped_with_sigterm_still_removes_its_workspace(db):
    import os
    import signal

    import pytest

    from bench.common import temporary_workspace

    slugs = []

    def run_until_killed():
        with temporary_workspace("sigterm") as workspace:
            slugs.append(workspace.slug)
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped:
        run_until_killed()
    assert stopped.value.code == 128 + signal.SIGTERM
    assert not Workspace.objects.filter(slug=slugs[0]).exists()
    assert signal.getsignal(signal.SIGTERM) == before, "the previous handler is back"
