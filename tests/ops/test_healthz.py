"""/healthz reports the database, Redis and the worker; 200 only when all are up."""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time

import pytest
import redis

from apps.core.embedded import redis_server_binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def spare_redis():
    """A Redis of the test's own, so stopping it leaves the suite's broker alone."""
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        process = subprocess.Popen([str(redis_server_binary()), "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--dir", workdir])
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        yield process, f"redis://127.0.0.1:{port}/0"
        if process.poll() is None:
            process.kill()
            process.wait()


def test_healthz_is_200_with_database_redis_and_worker_up(db, client, celery_worker):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["pgvector"].startswith("0.8")
    assert body["worker"]["workers"] >= 1


def test_healthz_goes_503_when_redis_is_stopped(db, client, settings, spare_redis, celery_worker):
    process, url = spare_redis
    settings.REDIS_URL = url
    assert client.get("/healthz").status_code == 200, "Redis is checked at REDIS_URL, the worker on the broker"
    process.terminate()
    process.wait()
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["redis"]["ok"] is False
    assert body["worker"]["ok"] is False
    assert body["database"]["ok"] is True


def test_healthz_reports_a_missing_worker(db, client, settings, spare_redis):
    """A broker that is up but that no worker consumes fails the worker check."""
    _, url = spare_redis
    settings.WORKER_PING_TIMEOUT_S = 0.3
    settings.REDIS_URL = settings.CELERY_BROKER_URL = url
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["worker"] == {"ok": False, "workers": 0}
