"""The API's one error shape (pagination and the rate limit are in api_defaults, the strict
input fields in strict; the workspace API base, which resolves tenancy, is
`apps.workspaces.api_base.WorkspaceAPIView`)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import JsonResponse
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.errors import ApplicationError
from apps.core.middleware import DATABASE_DOWN, RETRY_AFTER_S

log = logging.getLogger(__name__)


# --- the one error shape --------------------------------------------------------------


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="machine-readable, e.g. not_found, permission_denied, invalid, throttled")
    message = serializers.CharField(help_text="for a person")
    details = serializers.JSONField(allow_null=True, help_text="per-field messages for invalid input, else null or extra facts")


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


ERROR_MEANINGS = {
    400: "Invalid input; `details` has a message per field.",
    401: "No credentials, or an unknown or revoked key or token.",
    403: "Your role in this workspace does not allow this.",
    404: "No such object in this workspace, or not your workspace.",
    409: "The first request with this Idempotency-Key is still running.",
    413: "Every file was over the upload limit.",
    415: "Unsupported Content-Type.",
    422: "This Idempotency-Key was used for a different request.",
    429: "Over the rate limit; `Retry-After` says when to try again.",
}


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    """The one error shape, for the schema, for every status in `codes` plus 401, 404 and 429,
    which any workspace endpoint can answer."""
    return {code: OpenApiResponse(ErrorSerializer, description=ERROR_MEANINGS[code]) for code in sorted({401, 404, 429, *codes})}


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return _error(exc.status, exc.code, exc.message, {exc.field: [exc.message]} if exc.field else None)
    if isinstance(exc, RequestDataTooBig):
        return _error(413, "too_large", "The request's form fields are too large.", None)
    if isinstance(exc, SuspiciousOperation):
        return _error(400, "bad_request", "The request could not be read.", None)
    if isinstance(exc, DATABASE_DOWN):
        log.warning("API: database unavailable in %s: %s", context.get("view").__class__.__name__, exc.__class__.__name__)
        response = _error(
            503, "unavailable", "The service is briefly unavailable (the database cannot be reached); try again in a few seconds.", None
        )
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
    response = drf_exception_handler(exc, context)
    if response is None:
        if settings.DEBUG:
            return None  # Django's debug page
        log.exception("API error in %s", context.get("view").__class__.__name__)
        return _error(500, "server_error", "Something went wrong on our side; it has been logged.", None)
    if isinstance(exc, exceptions.ValidationError):
        return _error(response.status_code, "invalid", "The request has invalid fields.", response.data, response)
    detail = response.data.get("detail", "") if isinstance(response.data, dict) else response.data
    code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    details = {"retry_after_s": exc.wait} if isinstance(exc, exceptions.Throttled) else None
    return _error(response.status_code, str(code), str(detail), details, response)


def not_found(request, *args, **kwargs) -> JsonResponse:
    """Any /api/ address that names no endpoint: the same shape as every other error."""
    body = {"error": {"code": "not_found", "message": f"No API endpoint at {request.path}.", "details": None}}
    return JsonResponse(body, status=404)


def _error(status: int, code: str, message: str, details, response: Response | None = None) -> Response:
    body = {"error": {"code": code, "message": message, "details": details}}
    if response is None:
        return Response(body, status=status)
    response.data = body
    return response
