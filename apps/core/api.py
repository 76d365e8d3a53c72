"""The API's base view (tenancy from the URL + credentials) and its one error shape."""

from __future__ import annotations

from rest_framework import exceptions, generics, mixins
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.errors import ApplicationError
from apps.core.tenancy import SAFE_METHODS, check_role, resolve_membership
from apps.workspaces.models import Role


class WorkspaceAPIView(generics.GenericAPIView):
    """Resolves request.workspace and request.membership from `workspace_id` in the URL.

    Not a member → 404 (as if the workspace did not exist); too low a role → 403.
    """

    read_role = Role.VIEWER
    write_role = Role.MEMBER

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        membership = resolve_membership(request.user, workspace_id=kwargs["workspace_id"])
        check_role(membership, self.read_role if request.method in SAFE_METHODS else self.write_role)
        request.workspace = membership.workspace
        request.membership = membership

    def list(self, request):
        """A paginated list of get_queryset(), which must be a workspace-scoped selector."""
        return mixins.ListModelMixin.list(self, request)

    def get_serializer_context(self):
        return super().get_serializer_context() | {"workspace": getattr(self.request, "workspace", None)}


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return _error(exc.status, exc.code, exc.message, {exc.field: [exc.message]} if exc.field else None)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        return _error(response.status_code, "invalid", "The request has invalid fields.", response.data, response)
    detail = response.data.get("detail", "") if isinstance(response.data, dict) else response.data
    code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    return _error(response.status_code, str(code), str(detail), None, response)


def _error(status: int, code: str, message: str, details, response: Response | None = None) -> Response:
    body = {"error": {"code": code, "message": message, "details": details}}
    if response is None:
        return Response(body, status=status)
    response.data = body
    return response
