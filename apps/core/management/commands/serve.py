from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import psutil
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from apps.core.serving import configured_web_plan
from apps.core.worker import celery_worker_command

# How long the worker and the web server have after Ctrl-C to finish what they are doing (a
# question being answered, a request being served) before they and every process they started
# are killed, so that `make run` stops within 15 s with its embedded servers. An ingestion takes
# longer and is not lost: its document stays claimed, and once the claim's heartbeat is older
# than INGEST_LEASE_S the scheduler's reaper of the next start queues it again
# (apps/documents/services.py documents_reap_stuck).
STOP_GRACE_S = 5.0


class Command(BaseCommand):
    help = "Migrate, seed the demo workspace, then run the Celery worker and the web server until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="127.0.0.1:8000")
        parser.add_argument("--no-demo", action="store_true", help="Do not create the demo workspace.")

    def handle(self, *args, bind: str, no_demo: bool, **options):
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        if not no_demo:
            call_command("seed_demo")
        call_command("prepare_embedder")
        # Before the first child starts: a Ctrl-C from here on stops every child it started.
        stop = _StopFlag()
        children: list[subprocess.Popen] = []
        try:
            children.append(self._start_worker())
            children.append(self._start_web(bind))
            self._announce(bind)
            while not stop.requested and all(child.poll() is None for child in children):
                time.sleep(0.5)
            if stop.requested:
                self.stdout.write(f"Stopping (within {STOP_GRACE_S:.0f} s; Ctrl-C again stops at once)…")
        finally:
            stop_children(children, cut_short=lambda: stop.count > 1)
            if settings.USES_EMBEDDED_SERVICES:
                from apps.core.embedded import stop_services

                stop_services(settings.VAR_DIR, settings.EMBEDDED_REDIS_PORT)
                self.stdout.write("Embedded Postgres and Redis stopped.")
        failed = [child.args[2] for child in children if child.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL, None)]
        if failed and not stop.requested:
            self.stderr.write(f"stopped because a process exited: {', '.join(failed)}")
            sys.exit(1)

    def _announce(self, bind: str) -> None:
        plan = configured_web_plan()
        self.stdout.write(
            self.style.SUCCESS(
                f"TrustRAG is up: http://{bind}/  (health: http://{bind}/healthz; web: {plan.workers} process(es) × "
                f"{plan.threads} threads) — Ctrl-C stops everything"
            )
        )

    def _start_worker(self) -> subprocess.Popen:
        # The embedded scheduler runs the reaper that re-queues documents whose
        # worker died mid-ingestion. One worker here, so one scheduler.
        cmd = celery_worker_command(extra=("--beat",))
        return subprocess.Popen(cmd, start_new_session=True)

    def _start_web(self, bind: str) -> subprocess.Popen:
        cmd = [
            sys.executable,
            "-m",
            "gunicorn",
            "trustrag_site.wsgi",
            "--bind",
            bind,
            "--config",
            "python:trustrag_site.gunicorn_conf",
            "--timeout",
            "120",
            "--access-logfile",
            "-",
        ]
        return subprocess.Popen(cmd, start_new_session=True)


class _StopFlag:
    """Turns Ctrl-C / SIGTERM / SIGHUP into a count, so shutdown runs in one place and a second
    Ctrl-C can cut it short."""

    def __init__(self):
        self.count = 0
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self._set)

    @property
    def requested(self) -> bool:
        return self.count > 0

    def _set(self, *_):
        self.count += 1


def stop_children(children: list[subprocess.Popen], *, cut_short: Callable[[], bool]) -> None:
    """SIGTERM each child, give them STOP_GRACE_S together (until `cut_short()`: a second
    Ctrl-C), then SIGKILL each one still running and whatever is left in its session.

    Only the child itself is asked: a parser or OCR process that died under a running task
    would mark its document failed, where killing the whole session at once leaves it to be
    retried."""
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    while not cut_short() and time.monotonic() < deadline and any(child.poll() is None for child in children):
        time.sleep(0.1)
    for child in children:
        _kill_session(child)


def _kill_session(leader: subprocess.Popen) -> None:
    """SIGKILL `leader` if it still runs, then every process of the session it leads
    (start_new_session): Celery's scheduler child, parser and OCR processes, gunicorn's
    workers. Orphans stay in their session, so none escapes. The leader goes first, so that no
    task of its sees a subprocess die."""
    if leader.poll() is None:
        leader.kill()
    leader.wait()
    # Its pid cannot be reused while any process of its session is alive.
    members = [process for process in psutil.process_iter() if _session(process.pid) == leader.pid]
    for member in members:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.kill()
    _wait_gone(members, timeout=5)


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:  # gone meanwhile
        return None


def _wait_gone(processes: list[psutil.Process], *, timeout: float) -> None:
    """Wait until `processes` have exited. Orphans are reaped by PID 1 when it gets to them (some
    container inits, once a second): a zombie has already let go of everything it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_running(process) for process in processes):
        time.sleep(0.02)


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
