"""The sources' fixtures: the session's fake E-utilities and web servers, reset for each test,
with this process's settings pointed at them (the worker's are, through worker_env)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.sources.fakes import FakeEutils, FakeWeb, session_fakes


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
