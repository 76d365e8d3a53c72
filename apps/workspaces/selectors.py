from __future__ import annotations

from django.db.models import QuerySet

from apps.workspaces.models import Membership, Workspace, WorkspaceSettings


def membership_list_for_user(*, user) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("workspace").order_by("workspace__name")


def membership_list(*, workspace: Workspace) -> QuerySet[Membership]:
    return Membership.objects.filter(workspace=workspace).select_related("user").order_by("user__username")


def settings_get(*, workspace: Workspace) -> WorkspaceSettings:
    found, _ = WorkspaceSettings.objects.get_or_create(workspace=workspace)
    return found
