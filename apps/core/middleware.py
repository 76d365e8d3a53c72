"""Response policies applied to every request: a database outage answers 503 (never a
traceback), every page carries a Content-Security-Policy, pages answer only the methods a form
sends, and an unread request body is read and dropped so the connection stays usable."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.template.loader import render_to_string

log = logging.getLogger(__name__)

# The errors of a database that is down, restarting or unreachable: psycopg's connection
# failures and "terminating connection due to administrator command" arrive as these.
DATABASE_DOWN = (OperationalError, InterfaceError)
RETRY_AFTER_S = 5


def unavailable(request: HttpRequest) -> HttpResponse:
    """The 503 a person or a client sees while the database is down: the API's one error shape,
    or a short page that does not touch the database itself."""
    if request.path.startswith("/api/"):
        message = "The service is briefly unavailable (the database cannot be reached); try again in a few seconds."
        response = JsonResponse({"error": {"code": "unavailable", "message": message, "details": None}}, status=503)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exc):
        if isinstance(exc, DATABASE_DOWN):
            log.warning("database unavailable for %s %s: %s", request.method, request.path, exc.__class__.__name__)
            return unavailable(request)
        return None


class ContentSecurityPolicyMiddleware:
    """Scripts, styles, images, fonts and connections from this origin only; no plugins, no
    framing, forms post here. The API docs (Swagger UI, Redoc) run inline code of their own and
    get CSP_DOCS_POLICY."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            docs = request.path.startswith(settings.CSP_DOCS_PATHS)
            response["Content-Security-Policy"] = settings.CSP_DOCS_POLICY if docs else settings.CSP_POLICY
        return response


class UnreadBodyMiddleware:
    """Reads and drops what a view left unread of the request body, up to UNREAD_BODY_DRAIN_BYTES.

    gunicorn answers with `Connection: keep-alive`, then drains at most 64 KB of an unread body
    before it reuses the connection; past that it closes it, and the client's next request on
    it fails. Reading the rest here keeps the connection good for anything the server accepts
    (NO_BODY_MAX_BYTES refuses large bodies where none is read, apps.workspaces.api_base). A
    remainder past the drain limit is left: gunicorn then closes the connection."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        _drain(request, settings.UNREAD_BODY_DRAIN_BYTES)
        return response


def _drain(request: HttpRequest, limit: int) -> None:
    stream = getattr(request, "_stream", None)
    if stream is None or hasattr(request, "_body"):  # nothing sent, or read whole (request.body)
        return
    try:
        while limit > 0 and (chunk := stream.read(min(64 * 1024, limit))):
            limit -= len(chunk)
    except OSError:  # the client went away: no connection left to keep
        pass


class PageMethodsMiddleware:
    """Pages are HTML forms, which send GET and POST only: any other method on a page (every
    path outside /api/, the admin's included) is a 405, not a page rendered as if it were a GET."""

    ALLOWED = ("GET", "HEAD", "POST")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in self.ALLOWED and not request.path.startswith("/api/"):
            return HttpResponseNotAllowed(self.ALLOWED)
        return self.get_response(request)
