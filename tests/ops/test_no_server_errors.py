"""Generated walks, not hand lists: every route of the URLconf (and every path of the OpenAPI
schema), with every method, every kind of credential and every way a client asks for a format
(`Accept: application/json`, `Accept: text/html`, `?format=api`), answers 2xx, 3xx or 4xx and
never a server error; a page (anything outside /api/) answers PUT, PATCH and DELETE with 405. A new route joins the walk by being in the URLconf."""

from __future__ import annotations

import re

import pytest
from django.core.cache import caches
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token

from apps.apikeys.models import ApiKey
from apps.apikeys.services import apikey_create, apikey_revoke
from apps.workspaces.models import Role
from tests.api.test_api_access import World

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
FORMATS = {
    "json": ({"HTTP_ACCEPT": "application/json"}, ""),
    "html": ({"HTTP_ACCEPT": "text/html"}, ""),
    "format=api": ({}, "?format=api"),
}
# Who asks: a person by session or by token, with each role; an outsider; workspace API keys
# with each role a key can have, one of the other workspace and a revoked one; nobody.
CREDENTIALS = (
    "anonymous",
    "owner session",
    "viewer session",
    "outsider session",
    "member token",
    "admin key",
    "viewer key",
    "key of another workspace",
    "revoked key",
)
# Routes that are not the product's own pages: Django's static and media serving.
SKIPPED_PREFIXES = ("static/", "media/")


@pytest.fixture
def limits_cleared():
    """The walk sends thousands of requests from one address: its counts in the rate limit and
    the login limit are cleared afterwards, so no later test starts throttled."""
    yield
    cache = caches["throttle"]
    client = cache._cache.get_client(write=True)
    for pattern in ("rate:*", "login-failures:*"):
        for key in client.scan_iter(match=cache.make_key(pattern)):
            client.delete(key)


def routes() -> list[tuple[str, str]]:
    """(route, name) of every URL pattern in the URLconf, prefixes joined."""
    found: list[tuple[str, str]] = []

    def walk(patterns, prefix: str = "") -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                found.append((prefix + str(pattern.pattern), pattern.name or ""))

    walk(get_resolver().url_patterns)
    kept = [(route, name) for route, name in found if not route.startswith(SKIPPED_PREFIXES)]
    # Leaving a workspace ends the caller's membership: walked last, so the rest runs as a member.
    return sorted(kept, key=lambda route: route[1].endswith("_leave"))


def concrete(route: str, name: str, world: World, slug: str, user_pk: int) -> str:
    """The route with each of its parameters filled by an object of workspace A."""
    values = {
        "workspace_id": world.ws,
        "slug": slug,
        "membership_id": world.tess,
        "document_id": world.doc,
        "batch_id": world.batch,
        "run_id": world.eval_run if "eval" in name else world.run,
        "set_id": world.eval_set,
        "key_id": world.old_key,
        "record_id": world.record,
        "invitation_id": world.invitation,
        "source_id": world.source,
        "fmt": "csv",
        "object_id": user_pk,
        "id": user_pk,
        "content_type_id": 1,
        "app_label": "auth",
        "url": "nowhere/",
    }
    route = route.lstrip("^").rstrip("$")
    route = re.sub(r"\^?audits/export\\\.\(\?P<fmt>[^)]*\)\$?", "audits/export.csv", route)
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(values[m.group(1)]), route)
    route = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m.group(1)]), route)
    route = route.replace("^", "").replace("$", "").replace(".*", "anything/")
    return "/" + route


def _client(personas, credential: str) -> Client:
    client = Client(raise_request_exception=False)
    if credential.endswith("session"):
        who = "owner_b" if credential.startswith("outsider") else credential.split()[0]
        client.force_login(getattr(personas, who).user)
    elif credential == "member token":
        client.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.get_or_create(user=personas.member.user)[0].key}"
    elif credential.endswith("key"):
        role = {"admin key": Role.ADMIN, "viewer key": Role.VIEWER}.get(credential, Role.ADMIN)
        workspace = personas.workspace_b if credential == "key of another workspace" else personas.workspace_a
        key, secret = apikey_create(workspace=workspace, actor=None, name=credential, role=role)
        if credential == "revoked key":
            apikey_revoke(workspace=workspace, actor=personas.owner, key_id=key.pk)
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    return client


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_no_route_answers_any_method_credential_or_format_with_a_server_error(personas, credential, settings, tmp_path, limits_cleared):
    settings.API_THROTTLE_RATE = "100000/min"
    settings.MEDIA_ROOT = tmp_path
    world = World(personas)
    client = _client(personas, credential)
    failures, sent = [], 0
    for route, name in routes():
        path = concrete(route, name, world, personas.workspace_a.slug, personas.owner.user.pk)
        for method in METHODS:
            for fmt, (headers, query) in FORMATS.items():
                response = client.generic(method, path + query, b"{}", content_type="application/json", **headers)
                sent += 1
                # /healthz answers 503 by design while a service it checks is down (no worker runs here).
                if response.status_code >= 500 and not (path == "/healthz" and response.status_code == 503):
                    failures.append(f"{method} {path} [{fmt}] → {response.status_code}")
                if method in ("PUT", "PATCH", "DELETE") and not path.startswith("/api/") and response.status_code != 405:
                    failures.append(f"{method} {path} [{fmt}] → {response.status_code}: a page answers only GET and POST")
    assert failures == []
    assert sent > 1000


def test_the_walk_covers_every_path_of_the_openapi_schema(personas, client):
    """Each of the schema's paths is one the walk above sends to."""
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    world = World(personas)
    walked = {concrete(route, name, world, "acme", 1) for route, name in routes()}
    missing = [
        path for path in schema["paths"] if not any(re.fullmatch(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path)), url) for url in walked)
    ]
    assert len(schema["paths"]) > 15
    assert missing == []


def test_api_keys_of_the_walk_are_real_credentials(personas):
    """A key the walk sends is one the server accepts (so the walk is not 401 everywhere)."""
    client = _client(personas, "admin key")
    assert client.get(f"/api/v1/workspaces/{personas.workspace_a.pk}/", HTTP_ACCEPT="application/json").status_code == 200
    assert ApiKey.objects.filter(workspace=personas.workspace_a, revoked_at__isnull=True).exists()


def test_a_write_asked_for_in_html_is_refused_before_it_happens(personas):
    """Finding 1: a key's write with `Accept: text/html` was a 500 after the write was stored."""
    from apps.documents.models import Document
    from apps.queries.models import QueryRun

    client = _client(personas, "admin key")
    base = f"/api/v1/workspaces/{personas.workspace_a.pk}"
    asked = client.post(
        f"{base}/queries/", {"question": "What is pypdf used for?", "async": True}, content_type="application/json", HTTP_ACCEPT="text/html"
    )
    uploaded = client.post(f"{base}/documents/?format=api", {"files": [_upload()]})
    for response in (asked, uploaded):
        assert response.status_code == 406
        assert "JSON only" in response.json()["error"]["message"]
    assert not QueryRun.objects.filter(workspace=personas.workspace_a).exists()
    assert not Document.objects.filter(workspace=personas.workspace_a).exists()


def test_the_docs_pages_and_options_serve_an_api_key(personas):
    """Finding 1 and 3: the docs pages with a Bearer key, OPTIONS on action-only endpoints."""
    client = _client(personas, "viewer key")
    world = World(personas)
    for page in ("/api/v1/docs/", "/api/v1/redoc/"):
        response = client.get(page, HTTP_ACCEPT="text/html")
        assert response.status_code == 200
        assert b"<html" in response.content.lower()
    base = f"/api/v1/workspaces/{world.ws}"
    for path in (f"{base}/documents/reindex/", f"{base}/documents/{world.doc}/reindex/", f"{base}/eval-runs/{world.eval_run}/apply/"):
        response = client.options(path)
        assert response.status_code == 200, path
        assert "POST" in response["Allow"]
        assert "actions" not in response.json()


def _upload():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("notes.txt", b"The lamp is lit at dusk.")
