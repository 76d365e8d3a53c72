"""What every benchmark command shares: a temporary workspace, progress on stderr,
and one JSON object as the last line of stdout (BENCHMARKS.md fixes these rules)."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from apps.core.worker import celery_worker_command
from apps.documents.tasks import warm_up
from apps.workspaces.models import Workspace
from apps.workspaces.services import workspace_create, workspace_delete
from trustrag_site.celery import app


@contextmanager
def temporary_workspace(label: str) -> Iterator[Workspace]:
    """A workspace of its own for one benchmark run, removed (with everything in it) at the end."""
    tag = uuid.uuid4().hex[:10]
    owner = get_user_model().objects.create_user(f"bench-{tag}", password=None)
    workspace = workspace_create(owner=owner, name=f"bench {label} {tag}", slug=f"bench-{label}-{tag}")
    # A benchmark stopped with SIGTERM (a CI limit, a `kill`) still removes its workspace.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield workspace
    finally:
        signal.signal(signal.SIGTERM, previous)
        workspace_delete(workspace=workspace, actor=None)
        owner.delete()


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def emit(result: dict, json_path: str | None, stream=None) -> None:
    """The result as one JSON line, last on stdout (pass a command's self.stdout), and to --json."""
    line = json.dumps(result, sort_keys=False)
    if json_path:
        Path(json_path).write_text(line + "\n")
    stream = stream or sys.stdout
    stream.write(line + "\n")
    stream.flush()


def read_jsonl(path: str | Path) -> Iterator[dict]:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def data_path(*parts: str) -> Path:
    """A default data path: `../shared/data/…` beside the repository (how CI and every
    machine here lay it out). Every benchmark takes its data as arguments; this is only the default."""
    return Path(settings.BASE_DIR).parent.joinpath("shared", "data", *parts)


class celery_worker:
    """Use the running worker, or start one for the run; either way, warm its model first."""

    def __enter__(self) -> str:
        self.process = None
        if not app.control.ping(timeout=1.0):
            cmd = celery_worker_command(loglevel="WARNING")
            self.process = subprocess.Popen(cmd, cwd=settings.BASE_DIR, stdout=subprocess.DEVNULL, stderr=sys.stderr)
            self._wait_for_ping()
        warm_up.delay().get(timeout=300)
        return "started for this run" if self.process else "already running"

    def _wait_for_ping(self) -> None:
        deadline = time.monotonic() + 120
        while not app.control.ping(timeout=0.5):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise CommandError("could not start a Celery worker for the benchmark")

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=60)
