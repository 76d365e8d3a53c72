"""The one resolver from URL + user to workspace + membership, and the access helper.

A workspace the user is not a member of is answered exactly like one that
does not exist (404), so outsiders learn nothing from probing slugs or ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, TypeVar

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404, HttpRequest

from apps.workspaces.models import HoldsRole, Membership, Role, Workspace

if TYPE_CHECKING:
    from apps.apikeys.models import ApiKey

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
M = TypeVar("M", bound=models.Model)


def resolve_membership(user, *, slug: str | None = None, workspace_id: str | None = None) -> Membership:
    if not user.is_authenticated:
        raise Http404("No such workspace.")
    memberships = Membership.objects.select_related("workspace").filter(user=user)
    if slug is not None:
        memberships = memberships.filter(workspace__slug=slug)
    else:
        memberships = memberships.filter(workspace_id=_as_uuid(workspace_id))
    membership = memberships.first()
    if membership is None:
        raise Http404("No such workspace.")
    return membership


@dataclass(frozen=True)
class KeyMembership(HoldsRole):
    """What a workspace API key holds in its workspace: a role, like a membership, and no person.

    Services that take a membership as `actor` take this too: `user` is None (nobody to name
    as the actor; the audit trail names the key instead, see audits.services)."""

    api_key: ApiKey
    workspace: Workspace
    role: str
    user: None = None


def resolve_key_membership(api_key: ApiKey, *, workspace_id) -> KeyMembership:
    """A key works in its own workspace only; anywhere else it is an outsider (404)."""
    if api_key.workspace_id != _as_uuid(workspace_id):
        raise Http404("No such workspace.")
    return KeyMembership(api_key=api_key, workspace=api_key.workspace, role=api_key.role)


def check_role(membership: Membership | KeyMembership, role: str) -> None:
    if not membership.has_role(role):
        raise PermissionDenied(f"This needs the {Role(role).label.lower()} role or higher in {membership.workspace.name}.")


def workspace_view(*, write: str = Role.MEMBER, read: str = Role.VIEWER) -> Callable:
    """Resolve `slug` from the URL into request.workspace / request.membership.

    Safe methods need `read`, everything else needs `write`.
    """

    def decorator(view: Callable) -> Callable:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, slug: str, *args, **kwargs):
            membership = resolve_membership(request.user, slug=slug)
            check_role(membership, read if request.method in SAFE_METHODS else write)
            request.workspace = membership.workspace
            request.membership = membership
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def access(model: type[M], workspace: Workspace, pk, queryset: models.QuerySet[M] | None = None) -> M:
    """Fetch one tenant-owned row of `workspace`; 404 for missing and not-yours alike."""
    queryset = model.objects.all() if queryset is None else queryset
    obj = queryset.filter(workspace=workspace, pk=_as_uuid(pk)).first()
    if obj is None:
        raise Http404(f"No such {model._meta.verbose_name}.")
    return obj


def _as_uuid(value) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise Http404("Not found.") from None
