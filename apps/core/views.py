from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from django import forms
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_safe

from apps.core.errors import ApplicationError
from apps.core.login_limit import login_guarded
from apps.core.middleware import DATABASE_DOWN, unavailable

T = TypeVar("T")


def call_service(form: forms.Form, service: Callable[..., T], **kwargs) -> T | None:
    """Run a service for a page; its ApplicationError becomes the form's error (the one place pages do this)."""
    try:
        return service(**kwargs)
    except ApplicationError as exc:
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return None


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500, for failures outside a view (a middleware saving the session, say): a database
    outage is still a 503; anything else a plain page, or the API's error shape. Django calls it
    while handling the exception, so sys.exc_info() holds it."""
    if isinstance(sys.exc_info()[1], DATABASE_DOWN):
        return unavailable(request)
    if request.path.startswith("/api/"):
        body = {"error": {"code": "server_error", "message": "Something went wrong on our side; it has been logged.", "details": None}}
        return JsonResponse(body, status=500)
    return HttpResponse(render_to_string("500.html"), status=500)


def home(request: HttpRequest):
    return redirect("workspace_list" if request.user.is_authenticated else "login")


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    redis_state = _check_redis()
    # Without the broker a worker ping could only hang on reconnects.
    worker_state = _check_worker() if redis_state["ok"] else {"ok": False, "workers": 0, "error": "broker unreachable"}
    checks = {"database": _check_database(), "redis": redis_state, "worker": worker_state}
    healthy = all(c["ok"] for c in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503)


def _check_database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        return {"ok": row is not None, "pgvector": row[0] if row else None}
    except Exception as exc:  # any failure to reach the database is "down", with its class for people
        return {"ok": False, "error": exc.__class__.__name__}


def _check_redis() -> dict:
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1).ping()
        return {"ok": True}
    except redis.exceptions.RedisError as exc:
        return {"ok": False, "error": exc.__class__.__name__}


def _check_worker() -> dict:
    from celery import current_app as app  # the project's app (trustrag_site.celery): core imports nothing above it

    try:
        with app.connection_for_write(settings.CELERY_BROKER_URL) as conn:
            replies = app.control.ping(timeout=settings.WORKER_PING_TIMEOUT_S, connection=conn)
    except Exception as exc:  # the broker being down surfaces here as a kombu/redis error
        return {"ok": False, "workers": 0, "error": exc.__class__.__name__}
    return {"ok": bool(replies), "workers": len(replies)}


class LoginView(auth_views.LoginView):
    """Django's login page under the one login policy (apps.core.login_limit.login_guarded)."""

    def post(self, request, *args, **kwargs):
        return login_guarded(request, lambda: super(LoginView, self).post(request, *args, **kwargs))
