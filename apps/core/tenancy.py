"""The one resolver from URL + user to workspace + membership, and the access helper.

A workspace the user is not a member of is answered exactly like one that
does not exist (404), so outsiders learn nothing from probing slugs or ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404, HttpRequest

from apps.workspaces.models import Membership, Role, Workspace

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


def check_role(membership: Membership, role: str) -> None:
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
