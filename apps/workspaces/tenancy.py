"""Tenancy: the one resolver from URL + credentials to workspace + membership, the page
decorator and the API base that use it, and the access helper for every object fetch.

A workspace the user is not a member of is answered exactly like one that
does not exist (404), so outsiders learn nothing from probing slugs or ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import TypeVar

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db import models
from django.http import Http404, HttpRequest

from apps.core.credentials import WorkspaceCredential
from apps.workspaces.models import HoldsRole, Invitation, InvitationStatus, Membership, Role, Workspace

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

    Services take this as `actor` wherever they take a membership: `user` is None (nobody to
    name), and `label` is what the audit trail names instead."""

    api_key: WorkspaceCredential
    workspace: Workspace
    role: str
    user: None = None

    @property
    def label(self) -> str:
        return self.api_key.label


def resolve_key_membership(api_key: WorkspaceCredential, *, workspace_id) -> KeyMembership:
    """A key works in its own workspace only; anywhere else it is an outsider (404)."""
    if api_key.workspace_id != _as_uuid(workspace_id):
        raise Http404("No such workspace.")
    return KeyMembership(api_key=api_key, workspace=api_key.workspace, role=api_key.role)


# Who may do what, decided here once: each operation's lowest role. Pages (`workspace_view`),
# API classes (`read_operation` / `write_operation`) and services (`require`) all ask this table;
# a name it does not hold fails when the view or class is defined.
OPERATIONS: dict[str, str] = {
    "read": Role.VIEWER,  # pages, answers, documents, audit trail, evaluations
    "contribute": Role.MEMBER,  # upload, ask, re-index a document, run an evaluation
    "reverify": Role.MEMBER,  # judge an answer's claims again against its sources' current text
    "leave": Role.VIEWER,  # a person leaves a workspace they are in (never its last owner; never an API key)
    "manage_members": Role.ADMIN,  # members, their roles, and invitations
    "manage_settings": Role.ADMIN,  # pipeline settings and providers
    "manage_keys": Role.ADMIN,  # see, create and revoke API keys
    "reindex_all": Role.ADMIN,
    "schedule_sources": Role.ADMIN,  # a PubMed query or web page re-checked on a schedule (apps/sources)
    "apply_evaluation": Role.ADMIN,  # an evaluation's recommended thresholds become the settings
    "delete_workspace": Role.OWNER,  # the workspace and everything in it, its audit trail included
}


def require(actor: Membership | KeyMembership | None, operation: str, *, workspace: Workspace) -> None:
    """The one decision, made by every service that acts for someone: PermissionDenied (403)
    unless `actor` may do `operation` in `workspace`; an actor of another workspace is answered
    as if the workspace did not exist (404). `actor` None is the operator at the shell or the
    product's own work (management commands, the scheduler, a worker's task): pages and the
    API always pass the caller's membership (tests/workspaces/test_actor_services.py)."""
    if actor is None:
        return
    if actor.workspace.pk != workspace.pk:
        raise Http404("No such workspace.")
    check_role(actor, OPERATIONS[operation])


def actor_label(actor: Membership | KeyMembership | None, *, api: bool = False) -> str:
    """How the audit trail names who acted, decided here only: an API key by its label, a person
    by their username ("api:<username>" for a call through the API), the product's own work
    (actor None) as "anonymous" unless the caller names it ("manage.py ask", an evaluation)."""
    if actor is None:
        return "anonymous"
    if actor.user is None:
        return actor.label
    return f"api:{actor.user.get_username()}" if api else actor.user.get_username()


def operation_role(operation: str) -> str:
    if operation not in OPERATIONS:
        raise ImproperlyConfigured(f"Unknown operation “{operation}”: add it to OPERATIONS in apps/workspaces/tenancy.py.")
    return OPERATIONS[operation]


def check_role(membership: Membership | KeyMembership, role: str) -> None:
    if not membership.has_role(role):
        raise PermissionDenied(f"This needs the {Role(role).label.lower()} role or higher in {membership.workspace.name}.")


def workspace_view(*, write: str = "contribute", read: str = "read") -> Callable:
    """Resolve `slug` from the URL into request.workspace / request.membership.

    Safe methods need the `read` operation, everything else the `write` one (see OPERATIONS).
    """
    read, write = operation_role(read), operation_role(write)

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


def person_identifiers(user) -> list[str]:
    """What an invitation addressed to `user` holds: their username or e-mail, case-folded as
    invitations store them."""
    return [value.casefold() for value in (user.username, user.email) if value]


def access_invitation(user, pk, queryset: models.QuerySet[Invitation] | None = None) -> Invitation:
    """A pending invitation addressed to `user`, who is not a member yet: no workspace in the URL
    to resolve, so the invitation's own identifier decides. 404 for missing, answered and
    someone else's alike."""
    queryset = Invitation.objects.all() if queryset is None else queryset
    found = queryset.select_related("workspace").filter(
        pk=_as_uuid(pk), status=InvitationStatus.PENDING, identifier__in=person_identifiers(user)
    )
    invitation = found.first()
    if invitation is None:
        raise Http404("No such invitation.")
    return invitation


def _as_uuid(value) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise Http404("Not found.") from None
