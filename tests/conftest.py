"""Shared fixtures: the personas of two workspaces and a real Celery worker.

The worker is a subprocess on the real Redis broker of `make test`, talking to
the same test database; tests that need it use `transactional_db` so that what
they write is committed and visible to it.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.test import Client
from rest_framework.authtoken.models import Token

from apps.core.worker import celery_worker_command
from apps.workspaces.models import Membership, Role, Workspace
from tests.factories import PASSWORD, MembershipFactory, UserFactory, WorkspaceFactory
from tests.fake_services import FakeLLM, running
from tests.sources.fakes import FakeEutils, FakeWeb, session_fakes, worker_env_for_sources

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Personas:
    workspace_a: Workspace
    workspace_b: Workspace
    owner: Membership
    admin: Membership
    member: Membership
    viewer: Membership
    owner_b: Membership

    def client(self, who: str) -> Client:
        client = Client()
        client.force_login(getattr(self, who).user)
        return client

    def token(self, who: str) -> str:
        return Token.objects.get_or_create(user=getattr(self, who).user)[0].key

    def api_key(self, role: str, *, workspace: Workspace | None = None, name: str = "integration") -> str:
        """The secret of a new API key of workspace A (or `workspace`) with `role`."""
        from apps.apikeys.services import apikey_create

        return apikey_create(workspace=workspace or self.workspace_a, actor=None, name=name, role=role)[1]


@pytest.fixture
def personas(db) -> Personas:
    a = WorkspaceFactory(name="Acme Research", slug="acme")
    b = WorkspaceFactory(name="Beta Labs", slug="beta")
    return Personas(
        workspace_a=a,
        workspace_b=b,
        owner=MembershipFactory(workspace=a, user=UserFactory(username="olivia"), role=Role.OWNER),
        admin=MembershipFactory(workspace=a, user=UserFactory(username="adam"), role=Role.ADMIN),
        member=MembershipFactory(workspace=a, user=UserFactory(username="mia"), role=Role.MEMBER),
        viewer=MembershipFactory(workspace=a, user=UserFactory(username="victor"), role=Role.VIEWER),
        owner_b=MembershipFactory(workspace=b, user=UserFactory(username="oscar"), role=Role.OWNER),
    )


@pytest.fixture
def password() -> str:
    return PASSWORD


def _database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgresql://{db['USER']}:{db['PASSWORD']}@/{db['NAME']}?host={db['HOST']}"


class _SessionLLM:
    """One fake LLM server for the whole session, so that worker processes (started with
    their environment fixed) can be pointed at it too."""

    fake: FakeLLM | None = None
    url = ""

    @classmethod
    def start(cls) -> tuple[FakeLLM, str]:
        if cls.fake is None:
            cls.fake = FakeLLM()
            cls._server = running(cls.fake)
            cls.url = cls._server.__enter__()
        return cls.fake, cls.url


@pytest.fixture
def fake_llm(settings) -> FakeLLM:
    """The session's fake Groq/ZhipuAI server, reset, with this process's settings pointed at it
    and server keys set (per-workspace keys override them)."""
    fake, url = _SessionLLM.start()
    fake.reset()
    settings.GROQ_BASE_URL, settings.ZHIPUAI_BASE_URL = f"{url}/groq", f"{url}/zhipu"
    settings.GROQ_API_KEY, settings.ZHIPUAI_API_KEY = "gsk_servergroqkey0001", "zhipu-server-key.0002"
    settings.LLM_TIMEOUT_S = 2.0
    return fake


def worker_env() -> dict[str, str]:
    """The environment of a worker process that shares this test session's database and broker.
    It knows where the fake LLM server is but has no server keys: a workspace that wants an LLM
    provider in a worker test sets its own key."""
    _, llm_url = _SessionLLM.start()
    return os.environ | {
        "GROQ_BASE_URL": f"{llm_url}/groq",
        "ZHIPUAI_BASE_URL": f"{llm_url}/zhipu",
        "LLM_TIMEOUT_S": "10",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "SECRET_KEY": settings.SECRET_KEY,
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "DJANGO_SETTINGS_MODULE": "trustrag_site.settings",
        **worker_env_for_sources(),  # the fake E-utilities and web servers, 127.0.0.1 allowed
    }


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker):
    """A real `celery worker` process for the whole session, on the test database."""
    log = open(settings.VAR_DIR / "test-worker.log", "w")  # noqa: SIM115 - closed at teardown
    cmd = celery_worker_command()
    process = subprocess.Popen(cmd, cwd=ROOT, env=worker_env(), stdout=log, stderr=subprocess.STDOUT)
    _purge_queue()
    _wait_for_worker(process)
    yield process
    stop_process(process)
    log.close()


def stop_process(process: subprocess.Popen) -> None:
    """Terminate a server the tests started; kill it when it has not stopped within 20 s."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _purge_queue() -> None:
    from trustrag_site.celery import app

    app.control.purge()


def _wait_for_worker(process: subprocess.Popen) -> None:
    from trustrag_site.celery import app

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test worker exited with {process.returncode}; see {settings.VAR_DIR / 'test-worker.log'}")
        if app.control.ping(timeout=0.5):
            return
    raise RuntimeError("the test worker did not answer a ping within 60 s")


def wait_until(predicate, *, timeout: float = 60.0, interval: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


# The sources' fakes (tests/sources, and the browser test that imports from PubMed).
@pytest.fixture
def eutils(settings) -> FakeEutils:
    fake, url, _, _ = session_fakes()
    fake.reset()
    settings.NCBI_BASE_URL, settings.NCBI_EMAIL, settings.NCBI_BACKOFF_S = url, "tests@example.org", 0.05
    return fake


@pytest.fixture
def web(settings) -> FakeWeb:
    """The fake web server, reachable because the administrator's setting allows 127.0.0.1."""
    _, _, fake, url = session_fakes()
    fake.reset()
    fake.url, fake.port = url, urlsplit(url).port
    settings.SOURCES_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.SOURCES_FETCH_TIMEOUT_S = 5.0
    return fake
