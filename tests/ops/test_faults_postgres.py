"""Postgres restarted under load: while it is down every request fails cleanly — a 503 in the
API's one error shape, a short page for people, never a traceback — and requests succeed again
within 5 s of it being back, with the same web server and worker.

The test runs a Postgres of its own (var dir under tmp), a web server and a worker on it."""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.conftest import wait_until, worker_env
from tests.live import LivePostgres, manage, web_server, worker

SETUP = """
from apps.apikeys.services import apikey_create
from apps.workspaces.models import Membership, Role, Workspace
from django.contrib.auth.models import User
user = User.objects.create_user("petra", password="restart-proof-9")
ws = Workspace.objects.create(name="Outage", slug="outage")
Membership.objects.create(workspace=ws, user=user, role=Role.OWNER)
print(ws.pk, apikey_create(workspace=ws, actor=None, name="load", role="member")[1])
"""


@pytest.fixture
def own_postgres():
    # Under the var dir, not pytest's tmp: the server runs as another user when we are root,
    # and pytest's tmp dirs are private to us.
    var_dir = Path(tempfile.mkdtemp(prefix="fault-pg-", dir=settings.VAR_DIR))
    server = LivePostgres(var_dir)
    server.start()
    yield server
    server.stop()
    shutil.rmtree(var_dir, ignore_errors=True)


class Load:
    """Clients asking the API and a page in a loop; every response is kept with its time."""

    def __init__(self, http: httpx.Client, urls: list[str], clients: int = 4):
        self.http, self.urls, self.clients = http, urls, clients
        self.responses: list[tuple[float, str, int, str]] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(clients)]

    def _run(self, i: int) -> None:
        while not self.stopping.is_set():
            url = self.urls[i % len(self.urls)]
            try:
                response = self.http.get(url)
                self.responses.append((time.monotonic(), url, response.status_code, response.text))
            except httpx.TransportError as exc:
                self.responses.append((time.monotonic(), url, 0, repr(exc)))
            time.sleep(0.05)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def between(self, start: float, end: float) -> list[tuple[float, str, int, str]]:
        return [r for r in self.responses if start <= r[0] <= end]


def log_in(http: httpx.Client, username: str, password: str) -> None:
    page = http.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    done = http.post("/accounts/login/", data={"username": username, "password": password, "csrfmiddlewaretoken": token})
    assert done.status_code == 302, done.text


def test_requests_fail_cleanly_while_postgres_restarts_and_recover_within_five_seconds(own_postgres, tmp_path):
    env = worker_env() | {
        "DATABASE_URL": own_postgres.url,
        "TRUSTRAG_VAR_DIR": str(tmp_path / "var"),
        "GROQ_API_KEY": "",
        "ZHIPUAI_API_KEY": "",
        "API_THROTTLE_RATE": "100000/min",  # the load is the point here, not the rate limit
        # A Redis database of its own: the session's worker (on the test database) must not
        # take this server's tasks from the shared broker.
        "REDIS_URL": re.sub(r"/\d*$", "", settings.REDIS_URL) + "/7",
    }
    manage(env, "migrate", "--no-input", "-v", "0")
    workspace_id, key = manage(env, "shell", "-c", SETUP).strip().splitlines()[-1].split()
    api = f"/api/v1/workspaces/{workspace_id}/documents/"
    with web_server(env, tmp_path / "web.log") as url, worker(env, tmp_path / "worker.log"):
        people = httpx.Client(base_url=url, timeout=30)
        log_in(people, "petra", "restart-proof-9")
        keyed = httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {key}"})
        with Load(keyed, [api, api]) as api_load, Load(people, ["/w/outage/documents/"], clients=2) as page_load:
            time.sleep(2)
            went_down = time.monotonic()
            own_postgres.stop()
            time.sleep(4)
            own_postgres.start()
            back = time.monotonic()
            time.sleep(8)
        asked = keyed.post(f"/api/v1/workspaces/{workspace_id}/queries/", json={"question": "Is anything stored here?", "async": True})

        assert asked.status_code == 202, asked.text
        run_url = asked.json()["url"]
        settled = wait_until(lambda: keyed.get(run_url).json()["status"] in ("done", "failed"), timeout=90, what="the worker to answer")
        assert settled
        assert keyed.get(run_url).json()["status"] == "done", "the worker reconnected by itself"

    every = api_load.responses + page_load.responses
    assert {status for _, _, status, _ in every} <= {200, 503}, "no 500, no dropped connection"
    before = api_load.between(0, went_down) + page_load.between(0, went_down)
    assert before, "the load ran before the outage"
    assert all(status == 200 for _, _, status, _ in before)

    down = [r for r in every if r[2] == 503]
    assert down, "requests were made while the database was down"
    for _, url_path, _, body in down:
        if url_path.startswith("/api/"):
            assert '"code":"unavailable"' in body.replace(" ", "")
        else:
            assert "TrustRAG is briefly unavailable" in body
        assert "Traceback" not in body

    recovered = min(t for t, _, status, _ in api_load.between(back, float("inf")) if status == 200)
    assert recovered - back < 5, f"the API answered again {recovered - back:.1f} s after Postgres was back"
    last_failure = max(t for t, *_ in down)
    assert last_failure - back < 5
    assert all(r[2] == 200 for r in every if r[0] > back + 5)
    assert own_postgres.url != settings.DATABASES["default"]["HOST"]
