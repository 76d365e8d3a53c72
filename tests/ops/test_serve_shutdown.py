"""Ctrl-C on `make run` (manage.py serve) while the worker is deep in a long ingestion: serve
and every process it started — the Celery worker, its scheduler child and parser processes,
gunicorn and its workers — are gone within 15 s, and the interrupted document is not lost.

serve runs on a Redis of the test's own, so that only its worker takes the upload, and on the
session's test database. The last two tests drive serve's stop on small processes of their own:
a child that ignores the polite signal, and an orphan left behind in a child's session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path

import httpx
import psutil
import pytest
from django.conf import settings
from django.utils import timezone

from apps.core.management.commands.serve import STOP_GRACE_S, stop_children
from apps.documents import services
from apps.documents.models import Document, DocumentStatus
from tests.conftest import ROOT, wait_until, worker_env
from tests.live import LiveRedis, free_port

STOP_LIMIT_S = 15


def long_report() -> str:
    """Text whose embedding keeps a worker busy well past serve's grace period, even on a fast
    machine: the kill at the end of the grace is what is tested."""
    return " ".join(f"Station {n % 97} logged {n * 7 % 101} storms and {n % 13} floods in week {n} of the survey." for n in range(30000))


@pytest.fixture
def own_redis(tmp_path):
    server = LiveRedis(free_port(), tmp_path / "redis")
    server.start()
    yield server
    server.stop()


@contextmanager
def serve(env: dict[str, str], bind: str, log: Path) -> Iterator[subprocess.Popen]:
    """`manage.py serve` in a session of its own, as a terminal runs `make run` in its foreground
    process group. Whatever it left behind when a test fails is killed afterwards."""
    cmd = [sys.executable, "manage.py", "serve", "--bind", bind, "--no-demo"]
    with open(log, "w") as out:
        process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield process
        finally:
            leftovers = descendants(process.pid)
            process.kill()
            process.wait()
            for leftover in [*leftovers, *members(sessions(leftovers) | {process.pid})]:
                with suppress(psutil.NoSuchProcess):
                    leftover.kill()


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def sessions(processes: list[psutil.Process]) -> set[int]:
    """The sessions `processes` belong to, this test's own excepted."""
    return {sid for sid in map(_session, processes) if sid is not None} - {os.getsid(0)}


def members(sids: set[int]) -> list[psutil.Process]:
    """The live processes of the sessions `sids`: an orphan is no longer anyone's descendant,
    but it stays in the session it was born in."""
    return [p for p in psutil.process_iter() if _session(p) in sids and alive(p)]


def _session(process: psutil.Process) -> int | None:
    try:
        return os.getsid(process.pid)
    except OSError:
        return None


def alive(process: psutil.Process) -> bool:
    # A zombie holds no memory and runs nothing; when it is reaped is up to whoever is PID 1.
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def serve_env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env() | {
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "TRUSTRAG_VAR_DIR": str(tmp_path / "var"),
        "WEB_WORKERS": "1",
    }


def embedding(workspace) -> Document | None:
    return Document.objects.filter(workspace=workspace, status=DocumentStatus.PROCESSING, progress_total__gt=0).first()


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_mid_ingestion_stops_every_process_within_15_s_and_the_document_is_retried(personas, own_redis, tmp_path):
    workspace = personas.workspace_a
    bind = f"127.0.0.1:{free_port()}"
    with serve(serve_env(own_redis.url, tmp_path), bind, tmp_path / "serve.log") as server:
        wait_until(lambda: _answers(f"http://{bind}/healthz", server), timeout=120, what="serve's web server")
        upload = httpx.post(
            f"http://{bind}/api/v1/workspaces/{workspace.pk}/documents/",
            headers={"Authorization": f"Bearer {personas.api_key('member')}"},
            files={"files": ("survey.txt", long_report().encode())},
            timeout=60,
        )
        assert upload.status_code == 201, upload.text
        wait_until(lambda: embedding(workspace), timeout=120, what="the worker to be embedding the document")

        started = descendants(server.pid)
        their_sessions = sessions([psutil.Process(server.pid), *started])
        commands = [" ".join(p.cmdline()) for p in started]
        assert sum("celery" in c for c in commands) >= 2, f"the worker and its scheduler child: {commands}"
        assert any("gunicorn" in c for c in commands), commands
        began = time.monotonic()
        os.killpg(server.pid, signal.SIGINT)  # what Ctrl-C does to the terminal's foreground group
        try:
            server.wait(timeout=STOP_LIMIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"serve still running {STOP_LIMIT_S} s after Ctrl-C; see {tmp_path / 'serve.log'}")
        stopped_in = time.monotonic() - began
        left = {p.pid: p for p in [*started, *members(their_sessions)] if alive(p)}
        assert not left, [f"{pid} (parent {p.ppid()}): {' '.join(p.cmdline())}" for pid, p in left.items()]
    print(f"serve and its {len(started)} processes stopped {stopped_in:.1f} s after Ctrl-C")
    assert server.returncode == 0, (tmp_path / "serve.log").read_text()[-3000:]

    # The interrupted ingestion keeps its claim until its lease runs out; then the scheduler's
    # reaper (running in the worker of the next `make run`) queues it again.
    document = Document.objects.get(workspace=workspace)
    assert document.status == DocumentStatus.PROCESSING, "the ingestion was interrupted, not finished"
    later = timezone.now() + timedelta(seconds=settings.INGEST_LEASE_S + 1)
    assert services.documents_reap_stuck(now=later)["requeued"] == 1
    document.refresh_from_db()
    assert document.status == DocumentStatus.QUEUED


def _answers(url: str, server: subprocess.Popen) -> bool:
    assert server.poll() is None, "serve exited while starting"
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def child(code: str) -> tuple[subprocess.Popen, str]:
    """A Python child in a session of its own, as serve starts its children; returns it and the
    line it prints once ready."""
    process = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True)
    with process.stdout:
        return process, process.stdout.readline().strip()


def test_a_second_ctrl_c_kills_at_once_a_child_that_ignores_the_first():
    stubborn, _ = child("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)")
    began = time.monotonic()
    stop_children([stubborn], cut_short=lambda: True)
    assert time.monotonic() - began < 1 < STOP_GRACE_S
    assert stubborn.returncode == -signal.SIGKILL


def test_a_process_orphaned_in_a_childs_session_is_killed_once_the_child_has_stopped():
    # The child stops at once when asked, as a Celery worker with nothing to do does; what it
    # started stays behind with PID 1 as its parent, as the worker's scheduler child did.
    code = "import subprocess, time; p = subprocess.Popen(['sleep', '60']); print(p.pid, flush=True); time.sleep(60)"
    leader, grandchild_pid = child(code)
    grandchild = psutil.Process(int(grandchild_pid))
    began = time.monotonic()
    stop_children([leader], cut_short=lambda: False)
    assert time.monotonic() - began < STOP_GRACE_S, "no wait for the grace once the child has stopped"
    assert leader.returncode == -signal.SIGTERM
    assert not alive(grandchild)
