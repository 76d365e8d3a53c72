"""The members page: who may add, re-role and remove whom."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.audits.models import AuditEvent
from apps.workspaces.models import Membership, Role
from tests.factories import MembershipFactory, UserFactory


def add(client, identifier: str, role: str = Role.MEMBER):
    return client.post(reverse("members", args=["acme"]), {"identifier": identifier, "role": role})


def change_role(client, membership, role: str):
    return client.post(reverse("member_role", args=["acme", membership.pk]), {"role": role})


def remove(client, membership):
    return client.post(reverse("member_remove", args=["acme", membership.pk]))


def role_of(membership) -> str | None:
    found = Membership.objects.filter(pk=membership.pk).first()
    return found.role if found else None


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owner_and_admin_add_an_existing_user_by_username_or_email(personas, who):
    UserFactory(username="newcomer", email="newcomer@example.org")
    UserFactory(username="second", email="second@example.org")
    client = personas.client(who)
    assert add(client, "newcomer").status_code == 302
    assert add(client, "SECOND@example.org", Role.VIEWER).status_code == 302
    roles = dict(Membership.objects.filter(workspace=personas.workspace_a).values_list("user__username", "role"))
    assert roles["newcomer"] == Role.MEMBER
    assert roles["second"] == Role.VIEWER
    assert AuditEvent.objects.filter(workspace=personas.workspace_a, action="member.add").count() == 2


@pytest.mark.parametrize("who", ["member", "viewer"])
def test_member_and_viewer_cannot_manage_members(personas, who):
    UserFactory(username="newcomer")
    client = personas.client(who)
    assert add(client, "newcomer").status_code == 403
    assert change_role(client, personas.viewer, Role.ADMIN).status_code == 403
    assert remove(client, personas.viewer).status_code == 403
    assert role_of(personas.viewer) == Role.VIEWER
    assert not Membership.objects.filter(user__username="newcomer").exists()


def test_the_members_page_is_for_managers_only(personas):
    assert "Add a member" in personas.client("admin").get(reverse("members", args=["acme"])).content.decode()
    page = personas.client("member").get(reverse("members", args=["acme"]))
    assert page.status_code == 403
    assert "victor" not in page.content.decode()


def test_adding_an_unknown_user_says_so_and_adds_nothing(personas):
    response = add(personas.client("owner"), "nobody@example.com")
    assert response.status_code == 400
    assert "No user with the username or e-mail" in response.content.decode()
    assert Membership.objects.filter(workspace=personas.workspace_a).count() == 4


def test_adding_someone_twice_is_refused(personas):
    response = add(personas.client("owner"), "mia")
    assert response.status_code == 400
    assert "already a member" in response.content.decode()


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
    assert add(client, UserFactory(username="hopeful").username, Role.OWNER).status_code == 400
    assert not Membership.objects.filter(user__username="hopeful").exists()
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
