"""Bodies the server does not read: a body sent to an endpoint that takes none is refused (413)
past NO_BODY_MAX_BYTES, and whatever a view leaves unread is read and dropped, so the client's
connection stays usable for its next request (gunicorn closed it after answering keep-alive)."""

from __future__ import annotations

import re

import httpx
import pytest
from rest_framework.test import APIClient

from tests.api.test_api_access import World
from tests.conftest import worker_env
from tests.live import web_server

MEGABYTE_JSON = b'{"x": "' + b"y" * 1_000_000 + b'"}'


@pytest.fixture
def server(tmp_path):
    with web_server(worker_env() | {"API_THROTTLE_RATE": "10000/min"}, tmp_path / "web.log", workers=1, threads=4) as url:
        yield url


@pytest.mark.django_db(transaction=True)
def test_a_large_body_where_none_is_read_is_refused_and_the_connection_stays_usable(personas, server):
    world = World(personas)
    base = f"{server}/api/v1/workspaces/{world.ws}"
    headers = {"Authorization": f"Bearer {personas.api_key('admin')}", "Content-Type": "application/json"}
    with httpx.Client(headers=headers, timeout=30) as http:
        applied = http.post(f"{base}/eval-runs/{world.eval_run}/apply/", content=MEGABYTE_JSON)
        read = http.request("GET", f"{base}/documents/", content=MEGABYTE_JSON)
        after = http.get(f"{base}/")
    assert applied.status_code == 413
    assert "takes no body" in applied.json()["error"]["message"]
    assert read.status_code == 413
    assert after.status_code == 200, "the same connection serves the next request"


@pytest.mark.django_db(transaction=True)
def test_a_large_body_a_view_rejects_unread_leaves_the_connection_usable(personas, server):
    """A question too large for the JSON limit is refused before it is read; the rest is dropped."""
    base = f"{server}/api/v1/workspaces/{personas.workspace_a.pk}"
    headers = {"Authorization": f"Bearer {personas.api_key('member')}", "Content-Type": "application/json"}
    with httpx.Client(headers=headers, timeout=30) as http:
        asked = http.post(f"{base}/queries/", content=b'{"question": "' + b"q" * 3_000_000 + b'"}')
        after = http.get(f"{base}/")
    assert asked.status_code in (400, 413)
    assert after.status_code == 200


def test_every_operation_without_a_request_body_refuses_a_large_one(personas):
    """Generated from the OpenAPI schema: each POST that declares no request body answers a
    1 MB body with 413, and with none goes on as usual (not 413)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key('admin')}")
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    world = World(personas)
    ids = {
        "workspace_id": world.ws,
        "document_id": world.doc,
        "set_id": world.eval_set,
        "run_id": world.run,
        "invitation_id": world.invitation,
        "source_id": world.source,
    }
    bodiless = [path for path, operations in schema["paths"].items() if "post" in operations and "requestBody" not in operations["post"]]
    assert len(bodiless) >= 4
    for path in bodiless:
        values = ids | ({"run_id": world.eval_run} if "eval-runs" in path else {})
        url = re.sub(r"\{(\w+)\}", lambda m, values=values: str(values[m.group(1)]), path)
        refused = client.generic("POST", url, MEGABYTE_JSON, content_type="application/json")
        assert refused.status_code == 413, path
        assert client.post(url).status_code != 413, path
