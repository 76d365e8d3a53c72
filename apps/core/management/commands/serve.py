from __future__ import annotations

import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from apps.core.serving import configured_web_plan
from apps.core.worker import celery_worker_command


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
        children = [self._start_worker(), self._start_web(bind)]
        plan = configured_web_plan()
        self.stdout.write(
            self.style.SUCCESS(
                f"TrustRAG is up: http://{bind}/  (health: http://{bind}/healthz; web: {plan.workers} process(es) × "
                f"{plan.threads} threads) — Ctrl-C stops everything"
            )
        )
        stop = _StopFlag()
        try:
            while not stop.requested and all(child.poll() is None for child in children):
                time.sleep(0.5)
        finally:
            _terminate(children)
            if settings.USES_EMBEDDED_SERVICES:
                from apps.core.embedded import stop_services

                stop_services(settings.VAR_DIR, settings.EMBEDDED_REDIS_PORT)
                self.stdout.write("Embedded Postgres and Redis stopped.")
        failed = [child.args[2] for child in children if child.returncode not in (0, -signal.SIGTERM, None)]
        if failed and not stop.requested:
            self.stderr.write(f"stopped because a process exited: {', '.join(failed)}")
            sys.exit(1)

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
    """Turns Ctrl-C / SIGTERM into a flag, so shutdown runs in one place."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGINT, self._set)
        signal.signal(signal.SIGTERM, self._set)

    def _set(self, *_):
        self.requested = True


def _terminate(children: list[subprocess.Popen]) -> None:
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + 15
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
