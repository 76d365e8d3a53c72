"""The base of every workspace API endpoint: tenancy from the URL and the credentials.

An endpoint subclasses `WorkspaceAPIView`, sets `read_role` / `write_role` (or asks an access
helper of `tenancy` for an operation's own rule), takes its queryset from a workspace-scoped
selector and calls one service with `actor=request.membership`. Kept apart from `tenancy`
because DRF imports the authentication classes, which import services, which import tenancy.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import generics, mixins

from apps.core.credentials import WorkspaceCredential
from apps.core.errors import ApplicationError
from apps.workspaces.models import Membership
from apps.workspaces.tenancy import (
    SAFE_METHODS,
    KeyMembership,
    actor_label,
    operation_role,
    require,
    resolve_key_membership,
    resolve_membership,
)


class WorkspaceAPIView(generics.GenericAPIView):
    """Resolves request.workspace and request.membership from `workspace_id` in the URL.

    Not a member, or a key of another workspace → 404 (as if the workspace did not exist);
    too low a role → 403.
    """

    read_operation = "read"  # safe methods
    write_operation = "contribute"  # everything else (see tenancy.OPERATIONS)
    takes_body = True  # False where a POST is an action with no input (its schema says request=None)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        operation_role(cls.read_operation), operation_role(cls.write_operation)  # a typo fails at import

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        membership = resolve_api_membership(request, workspace_id=kwargs["workspace_id"])
        require(membership, self.read_operation if request.method in SAFE_METHODS else self.write_operation, workspace=membership.workspace)
        refuse_unwanted_body(request, wanted=self.takes_body and request.method not in (*SAFE_METHODS, "DELETE"))
        request.workspace = membership.workspace
        request.membership = membership

    @property
    def actor_label(self) -> str:
        """How an answer's audit record names who asked (tenancy.actor_label)."""
        return actor_label(self.request.membership, api=True)

    def list(self, request):
        """A paginated list of get_queryset(), which must be a workspace-scoped selector."""
        return mixins.ListModelMixin.list(self, request)

    def get_serializer_context(self):
        return super().get_serializer_context() | {"workspace": getattr(self.request, "workspace", None)}


def refuse_unwanted_body(request, *, wanted: bool) -> None:
    """A request that carries a body where none is read: refused past NO_BODY_MAX_BYTES, so a
    client learns it sent something that was never looked at (what is sent is still read and
    dropped, apps.core.middleware.UnreadBodyMiddleware, and the connection stays usable)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if not wanted and length > settings.NO_BODY_MAX_BYTES:
        raise ApplicationError(
            f"This request takes no body; send none (bodies over {settings.NO_BODY_MAX_BYTES // 1024} KB are refused).",
            status=413,
            code="too_large",
        )


def resolve_api_membership(request, *, workspace_id) -> Membership | KeyMembership:
    if isinstance(request.auth, WorkspaceCredential):
        return resolve_key_membership(request.auth, workspace_id=workspace_id)
    return resolve_membership(request.user, workspace_id=workspace_id)
