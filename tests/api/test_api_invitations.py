"""Invitations through the API: admins invite (202, alike for every identifier), list and
revoke; the invited person lists, accepts and declines their own; members leave. API keys
are workspace credentials, not people: they answer no invitation and leave nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.workspaces.models import Invitation, InvitationStatus, Membership, Role
from tests.factories import InvitationFactory, MembershipFactory, UserFactory


def person(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def keyed(personas, role: str = Role.ADMIN) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key(role)}")
    return client


def invite(client, personas, identifier: str, role: str = Role.VIEWER):
    return client.post(reverse("api_members", args=[personas.workspace_a.pk]), {"identifier": identifier, "role": role}, format="json")


def test_inviting_answers_202_alike_for_an_unknown_identifier_and_an_existing_account(personas):
    UserFactory(username="newcomer", email="newcomer@example.com")
    client = person(personas.owner.user)
    answers = {}
    for identifier in ("newcomer@example.com", "nobody@example.com"):
        response = invite(client, personas, identifier)
        body = response.json()
        assert set(body) == {"id", "identifier", "role", "status", "invited_by", "created_at"}
        answers[identifier] = (response.status_code, {k: v for k, v in body.items() if k not in ("id", "identifier", "created_at")})
    assert answers["newcomer@example.com"] == answers["nobody@example.com"]
    assert answers["nobody@example.com"] == (202, {"role": "viewer", "status": "pending", "invited_by": "olivia"})
    assert not Membership.objects.filter(user__username="newcomer").exists()


def test_an_admin_key_invites_and_the_invitation_names_no_person(personas):
    response = invite(keyed(personas), personas, "Nadia@Example.com")
    assert response.status_code == 202
    assert response.json()["identifier"] == "nadia@example.com"
    assert response.json()["invited_by"] is None


def test_an_admin_key_cannot_invite_an_owner(personas):
    response = invite(keyed(personas), personas, "hopeful", Role.OWNER)
    assert response.status_code == 403
    assert not Invitation.objects.exists()


def test_admins_list_read_and_revoke_the_pending_invitations(personas):
    kept = InvitationFactory(workspace=personas.workspace_a, identifier="nina")
    doomed = InvitationFactory(workspace=personas.workspace_a, identifier="paul")
    InvitationFactory(workspace=personas.workspace_b, identifier="elsewhere")
    client = person(personas.admin.user)
    ws = personas.workspace_a.pk
    listed = client.get(reverse("api_invitations", args=[ws])).json()
    assert sorted(i["identifier"] for i in listed["results"]) == ["nina", "paul"]
    assert client.get(reverse("api_invitation", args=[ws, kept.pk])).json()["status"] == "pending"
    assert client.delete(reverse("api_invitation", args=[ws, doomed.pk])).status_code == 204
    assert Invitation.objects.get(pk=doomed.pk).status == InvitationStatus.REVOKED
    assert [i["identifier"] for i in client.get(reverse("api_invitations", args=[ws])).json()["results"]] == ["nina"]
    assert client.get(reverse("api_invitation", args=[ws, doomed.pk])).status_code == 404, "a revoked invitation is gone"


def test_a_person_lists_accepts_and_declines_their_own_invitations(personas):
    nadia = UserFactory(username="nadia", email="nadia@example.com")
    to_acme = InvitationFactory(workspace=personas.workspace_a, identifier="nadia@example.com", role=Role.MEMBER)
    to_beta = InvitationFactory(workspace=personas.workspace_b, identifier="nadia", role=Role.VIEWER)
    InvitationFactory(workspace=personas.workspace_a, identifier="someone-else")
    client = person(nadia)
    listed = client.get(reverse("api_my_invitations")).json()
    assert {(i["workspace"]["slug"], i["role"]) for i in listed["results"]} == {("acme", "member"), ("beta", "viewer")}
    accepted = client.post(reverse("api_my_invitation_accept", args=[to_acme.pk]))
    assert accepted.status_code == 201
    assert (accepted.json()["slug"], accepted.json()["role"]) == ("acme", "member")
    assert client.post(reverse("api_my_invitation_decline", args=[to_beta.pk])).status_code == 204
    assert Invitation.objects.get(pk=to_beta.pk).status == InvitationStatus.DECLINED
    assert client.get(reverse("api_my_invitations")).json()["count"] == 0
    workspaces = client.get(reverse("api_workspaces")).json()["results"]
    assert [w["slug"] for w in workspaces] == ["acme"]


def test_someone_elses_invitation_is_404_and_stays_pending(personas):
    UserFactory(username="nadia")
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nadia")
    client = person(personas.owner_b.user)
    assert client.post(reverse("api_my_invitation_accept", args=[invitation.pk])).status_code == 404
    assert client.post(reverse("api_my_invitation_decline", args=[invitation.pk])).status_code == 404
    assert client.get(reverse("api_my_invitations")).json()["count"] == 0
    assert Invitation.objects.get(pk=invitation.pk).status == InvitationStatus.PENDING


@pytest.mark.parametrize("role", [Role.ADMIN, Role.VIEWER])
def test_an_api_key_answers_no_invitation_and_cannot_leave(personas, role):
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nadia")
    client = keyed(personas, role)
    answers = [
        client.get(reverse("api_my_invitations")),
        client.post(reverse("api_my_invitation_accept", args=[invitation.pk])),
        client.post(reverse("api_my_invitation_decline", args=[invitation.pk])),
        client.post(reverse("api_workspace_leave", args=[personas.workspace_a.pk])),
    ]
    assert [r.status_code for r in answers] == [403, 403, 403, 403]
    assert {r.json()["error"]["code"] for r in answers} == {"forbidden"}
    assert Invitation.objects.get(pk=invitation.pk).status == InvitationStatus.PENDING


def test_a_member_leaves_through_the_api_but_the_last_owner_cannot(personas):
    ws = personas.workspace_a.pk
    assert person(personas.viewer.user).post(reverse("api_workspace_leave", args=[ws])).status_code == 204
    assert not Membership.objects.filter(pk=personas.viewer.pk).exists()
    refused = person(personas.owner.user).post(reverse("api_workspace_leave", args=[ws]))
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "last_owner"
    MembershipFactory(workspace=personas.workspace_a, role=Role.OWNER)
    assert person(personas.owner.user).post(reverse("api_workspace_leave", args=[ws])).status_code == 204


def test_anonymous_callers_are_asked_to_authenticate(personas):
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nadia")
    client = APIClient()
    assert client.get(reverse("api_my_invitations")).status_code == 401
    assert client.post(reverse("api_my_invitation_accept", args=[invitation.pk])).status_code == 401
