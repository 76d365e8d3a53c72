"""One file uploaded many times at once — through the API and through the documents page, to a
live server of two processes — ends as one document and one stored file: no 500, no orphan.
The uploads of one content wait for each other on a Postgres advisory lock; a row lock cannot
serialise them, as no row exists until the first commits."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from apps.documents.models import Document
from tests.conftest import worker_env
from tests.live import web_server

pytestmark = pytest.mark.django_db(transaction=True)

CONTENT = b"The tide gauge at the north pier is read at six every morning and logged by the harbour master.\n"


@pytest.fixture
def server(tmp_path):
    env = worker_env() | {"MEDIA_ROOT": str(tmp_path / "media"), "API_THROTTLE_RATE": "10000/min"}
    with web_server(env, tmp_path / "web.log", workers=2, threads=8) as url:
        yield url


def stored_files(root) -> list:
    return [path for path in (root / "media").rglob("*") if path.is_file()]


def _session(server: str, personas, password: str) -> httpx.Client:
    """A browser-like client logged in as the workspace's member, its CSRF token at hand."""
    http = httpx.Client(base_url=server, timeout=60, follow_redirects=False)
    page = http.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    done = http.post(
        "/accounts/login/", data={"username": personas.member.user.username, "password": password, "csrfmiddlewaretoken": token}
    )
    assert done.status_code == 302, done.text[:300]
    return http


def test_eight_parallel_api_uploads_and_four_page_uploads_of_one_file_make_one_document(personas, server, tmp_path, password):
    url = f"{server}/api/v1/workspaces/{personas.workspace_a.pk}/documents/"
    headers = {"Authorization": f"Bearer {personas.api_key('member')}"}

    def by_api(n: int) -> int:
        with httpx.Client(headers=headers, timeout=60) as http:
            return http.post(url, files={"files": ("gauge.txt", CONTENT, "text/plain")}).status_code

    page = f"/w/{personas.workspace_a.slug}/documents/"
    browsers = [_session(server, personas, password) for _ in range(4)]

    def by_page(http: httpx.Client) -> int:
        token = http.cookies["csrftoken"]
        return http.post(page, files={"files": ("gauge.txt", CONTENT, "text/plain")}, headers={"X-CSRFToken": token}).status_code

    with ThreadPoolExecutor(12) as pool:
        api_futures = [pool.submit(by_api, n) for n in range(8)]
        page_futures = [pool.submit(by_page, http) for http in browsers]
        api = [future.result() for future in api_futures]
        pages = [future.result() for future in page_futures]

    assert set(api) <= {200, 201}, api  # 200: "already there", the same document
    assert api.count(201) <= 1, api
    assert set(pages) == {302}, pages  # back to the documents page, with its message
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 1
    assert len(stored_files(tmp_path)) == 1, "one stored file, none without its document"
