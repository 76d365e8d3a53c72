"""The members page and the workspace list: who may invite, re-role and remove whom; how an
invited person accepts or declines; how a member leaves. Nobody joins without accepting, and
no answer tells an admin whether an account exists."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from apps.audits.models import AuditEvent
from apps.workspaces.models import Invitation, InvitationStatus, Membership, Role
from tests.factories import InvitationFactory, MembershipFactory, UserFactory


def invite(client, identifier: str, role: str = Role.MEMBER):
    return client.post(reverse("members", args=["acme"]), {"identifier": identifier, "role": role})


def change_role(client, membership, role: str):
    return client.post(reverse("member_role", args=["acme", membership.pk]), {"role": role})


def remove(client, membership):
    return client.post(reverse("member_remove", args=["acme", membership.pk]))


def accept(client, invitation):
    return client.post(reverse("invitation_accept", args=[invitation.pk]))


def decline(client, invitation):
    return client.post(reverse("invitation_decline", args=[invitation.pk]))


def revoke(client, invitation):
    return client.post(reverse("invitation_revoke", args=["acme", invitation.pk]))


def leave(client, slug: str = "acme"):
    return client.post(reverse("workspace_leave", args=[slug]))


def role_of(membership) -> str | None:
    found = Membership.objects.filter(pk=membership.pk).first()
    return found.role if found else None


def status_of(invitation) -> str:
    return Invitation.objects.get(pk=invitation.pk).status


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owner_and_admin_invite_by_username_or_email_and_nobody_joins_until_they_accept(personas, who):
    UserFactory(username="newcomer", email="newcomer@example.org")
    client = personas.client(who)
    assert invite(client, "newcomer").status_code == 302
    assert invite(client, "  SECOND@Example.org ", Role.VIEWER).status_code == 302
    pending = dict(Invitation.objects.filter(workspace=personas.workspace_a).values_list("identifier", "role"))
    assert pending == {"newcomer": Role.MEMBER, "second@example.org": Role.VIEWER}
    assert Membership.objects.filter(workspace=personas.workspace_a).count() == 4, "nobody joined"
    assert AuditEvent.objects.filter(workspace=personas.workspace_a, action="invitation.create").count() == 2
    page = client.get(reverse("members", args=["acme"])).content.decode()
    assert "Pending invitations" in page
    assert "second@example.org" in page


def test_inviting_an_unknown_identifier_answers_exactly_as_inviting_an_existing_account(personas):
    """The account-enumeration finding: the same status, redirect and message either way."""
    UserFactory(username="newcomer", email="newcomer@example.com")
    answers = []
    for identifier in ("newcomer@example.com", "nobody@example.com"):
        response = invite(personas.client("owner"), identifier, Role.VIEWER)
        answers.append((response.status_code, response["Location"], [m.replace(identifier, "…") for m in messages_of(response)]))
    assert answers[0] == answers[1]
    assert answers[0][2] == ["Invitation for “…” sent: they join as viewer when they accept it."]


@pytest.mark.parametrize("exists", [True, False], ids=["existing account", "no such account"])
def test_inviting_someone_already_invited_is_refused_alike_whether_or_not_they_have_an_account(personas, exists):
    if exists:
        UserFactory(username="newcomer", email="newcomer@example.com")
    client = personas.client("owner")
    invite(client, "newcomer@example.com")
    response = invite(client, "Newcomer@example.com", Role.ADMIN)
    assert response.status_code == 400
    assert "“newcomer@example.com” is already invited: revoke that invitation" in response.content.decode()
    assert Invitation.objects.filter(workspace=personas.workspace_a).count() == 1


@pytest.mark.parametrize("identifier", ["mia", "MIA@example.com"])
def test_inviting_a_member_by_a_name_or_address_the_admin_already_sees_says_they_are_in(personas, identifier):
    response = invite(personas.client("admin"), identifier)
    assert response.status_code == 400
    assert "is already a member of Acme Research" in response.content.decode()
    assert not Invitation.objects.exists()


def test_an_identifier_longer_than_storable_once_case_folded_is_refused(personas):
    response = invite(personas.client("owner"), "ß" * 200)  # 200 characters, 400 once folded to "ss"
    assert response.status_code == 400
    assert not Invitation.objects.exists()


@pytest.mark.parametrize("who", ["member", "viewer"])
def test_member_and_viewer_cannot_invite_or_manage_members(personas, who):
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nina")
    client = personas.client(who)
    assert invite(client, "newcomer").status_code == 403
    assert revoke(client, invitation).status_code == 403
    assert change_role(client, personas.viewer, Role.ADMIN).status_code == 403
    assert remove(client, personas.viewer).status_code == 403
    assert role_of(personas.viewer) == Role.VIEWER
    assert list(Invitation.objects.values_list("identifier", "status")) == [("nina", InvitationStatus.PENDING)]


def test_the_members_page_is_for_managers_only(personas):
    assert "Invite someone" in personas.client("admin").get(reverse("members", args=["acme"])).content.decode()
    page = personas.client("member").get(reverse("members", args=["acme"]))
    assert page.status_code == 403
    assert "victor" not in page.content.decode()


def test_only_an_owner_invites_someone_as_owner(personas):
    assert invite(personas.client("admin"), "hopeful", Role.OWNER).status_code == 400
    assert not Invitation.objects.exists()
    assert invite(personas.client("owner"), "hopeful", Role.OWNER).status_code == 302
    assert Invitation.objects.get().role == Role.OWNER


def test_the_invited_person_sees_the_invitation_on_their_workspace_list_accepts_and_lands_in_the_workspace(personas):
    nadia = UserFactory(username="nadia", email="Nadia@Example.com")
    invite(personas.client("owner"), "nadia@example.com", Role.VIEWER)
    client = logged_in(nadia)
    listing = client.get(reverse("workspace_list")).content.decode()
    assert "Invitations" in listing
    assert "Acme Research" in listing
    assert "olivia" in listing, "who invited them"
    invitation = Invitation.objects.get()
    response = accept(client, invitation)
    assert response.status_code == 302
    assert response["Location"] == reverse("ask", args=["acme"])
    assert messages_of(response) == ["You joined Acme Research as viewer."]
    assert Membership.objects.get(workspace=personas.workspace_a, user=nadia).role == Role.VIEWER
    assert status_of(invitation) == InvitationStatus.ACCEPTED
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="invitation.accept")
    assert event.actor == nadia
    assert "Invitations" not in client.get(reverse("workspace_list")).content.decode()


def test_invitations_by_username_and_by_email_are_both_answered_by_accepting_one(personas):
    nadia = UserFactory(username="Nadia", email="nadia@example.com")
    by_name = InvitationFactory(workspace=personas.workspace_a, identifier="nadia", role=Role.MEMBER)
    by_email = InvitationFactory(workspace=personas.workspace_a, identifier="nadia@example.com", role=Role.VIEWER)
    elsewhere = InvitationFactory(workspace=personas.workspace_b, identifier="nadia")
    accept(logged_in(nadia), by_name)
    assert Membership.objects.get(workspace=personas.workspace_a, user=nadia).role == Role.MEMBER
    assert (status_of(by_name), status_of(by_email)) == (InvitationStatus.ACCEPTED, InvitationStatus.ACCEPTED)
    assert status_of(elsewhere) == InvitationStatus.PENDING, "another workspace's invitation stays open"


def test_declining_makes_no_member_and_the_audit_trail_names_no_account(personas):
    nadia = UserFactory(username="nadia")
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nadia")
    response = decline(logged_in(nadia), invitation)
    assert response.status_code == 302
    assert messages_of(response) == ["You declined the invitation to Acme Research."]
    assert status_of(invitation) == InvitationStatus.DECLINED
    assert not Membership.objects.filter(user=nadia).exists()
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="invitation.decline")
    assert event.actor is None
    assert event.data == {"identifier": "nadia", "role": Role.MEMBER}, "what the admin typed, nothing of the account"


def test_nobody_accepts_or_declines_an_invitation_addressed_to_someone_else(personas):
    UserFactory(username="nadia")
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nadia")
    for who in ("owner_b", "member"):
        assert accept(personas.client(who), invitation).status_code == 404
        assert decline(personas.client(who), invitation).status_code == 404
    assert status_of(invitation) == InvitationStatus.PENDING
    assert not Membership.objects.filter(workspace=personas.workspace_a, user=personas.owner_b.user).exists()


def test_an_answered_invitation_cannot_be_answered_again(personas):
    nadia = UserFactory(username="nadia")
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nadia", role=Role.VIEWER)
    client = logged_in(nadia)
    assert decline(client, invitation).status_code == 302
    assert accept(client, invitation).status_code == 404
    assert not Membership.objects.filter(user=nadia).exists()


def test_an_admin_revokes_an_invitation_which_then_cannot_be_accepted(personas):
    nadia = UserFactory(username="nadia")
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nadia")
    assert revoke(personas.client("admin"), invitation).status_code == 302
    assert status_of(invitation) == InvitationStatus.REVOKED
    assert AuditEvent.objects.filter(workspace=personas.workspace_a, action="invitation.revoke").count() == 1
    assert accept(logged_in(nadia), invitation).status_code == 404
    assert "Invitations" not in logged_in(nadia).get(reverse("workspace_list")).content.decode()


def test_only_an_owner_revokes_an_invitation_to_be_an_owner(personas):
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="hopeful", role=Role.OWNER)
    assert revoke(personas.client("admin"), invitation).status_code == 403
    assert status_of(invitation) == InvitationStatus.PENDING
    assert revoke(personas.client("owner"), invitation).status_code == 302
    assert status_of(invitation) == InvitationStatus.REVOKED


def test_an_invitation_of_another_workspace_cannot_be_revoked_through_this_one(personas):
    invitation = InvitationFactory(workspace=personas.workspace_b, identifier="nadia")
    assert revoke(personas.client("owner"), invitation).status_code == 404
    assert status_of(invitation) == InvitationStatus.PENDING


@pytest.mark.parametrize("name", ["invitation_accept", "invitation_decline"])
def test_answering_an_invitation_is_post_only(personas, name):
    nadia = UserFactory(username="nadia")
    invitation = InvitationFactory(workspace=personas.workspace_a, identifier="nadia")
    assert logged_in(nadia).get(reverse(name, args=[invitation.pk])).status_code == 405
    assert personas.client("member").get(reverse("workspace_leave", args=["acme"])).status_code == 405
    assert status_of(invitation) == InvitationStatus.PENDING


def test_a_member_leaves_a_workspace_from_the_workspace_list(personas):
    client = personas.client("member")
    listing = client.get(reverse("workspace_list")).content.decode()
    assert reverse("workspace_leave", args=["acme"]) in listing
    response = leave(client)
    assert response.status_code == 302
    assert response["Location"] == reverse("workspace_list")
    assert messages_of(response) == ["You left Acme Research."]
    assert role_of(personas.member) is None
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="member.leave")
    assert event.actor == personas.member.user
    assert client.get(reverse("ask", args=["acme"])).status_code == 404


def test_the_last_owner_cannot_leave_and_is_told_why(personas):
    response = leave(personas.client("owner"))
    assert response.status_code == 302
    assert messages_of(response) == ["You are the last owner of Acme Research: make someone else an owner before you leave."]
    assert role_of(personas.owner) == Role.OWNER


def test_an_owner_leaves_once_there_is_another_owner(personas):
    MembershipFactory(workspace=personas.workspace_a, role=Role.OWNER)
    leave(personas.client("owner"))
    assert role_of(personas.owner) is None


def test_owner_changes_roles_and_removes_members(personas):
    client = personas.client("owner")
    assert change_role(client, personas.member, Role.ADMIN).status_code == 302
    assert role_of(personas.member) == Role.ADMIN
    assert remove(client, personas.viewer).status_code == 302
    assert role_of(personas.viewer) is None
    actions = set(AuditEvent.objects.filter(workspace=personas.workspace_a).values_list("action", flat=True))
    assert {"member.role", "member.remove"} <= actions


def test_admin_cannot_make_or_touch_an_owner(personas):
    client = personas.client("admin")
    assert change_role(client, personas.member, Role.OWNER).status_code == 403
    assert change_role(client, personas.owner, Role.VIEWER).status_code == 403
    assert remove(client, personas.owner).status_code == 403
    assert role_of(personas.owner) == Role.OWNER
    assert role_of(personas.member) == Role.MEMBER


def test_last_owner_can_be_neither_demoted_nor_removed(personas):
    client = personas.client("owner")
    response = change_role(client, personas.owner, Role.ADMIN)
    assert response.status_code == 302
    assert "last owner" in client.get(response["Location"]).content.decode()
    remove(client, personas.owner)
    assert role_of(personas.owner) == Role.OWNER


def test_an_owner_can_step_down_once_there_is_another_owner(personas):
    second = MembershipFactory(workspace=personas.workspace_a, role=Role.OWNER)
    client = personas.client("owner")
    change_role(client, personas.owner, Role.ADMIN)
    assert role_of(personas.owner) == Role.ADMIN
    assert role_of(second) == Role.OWNER


def test_member_of_another_workspace_cannot_be_managed_through_this_one(personas):
    response = remove(personas.client("owner"), personas.owner_b)
    assert response.status_code == 404
    assert role_of(personas.owner_b) == Role.OWNER
