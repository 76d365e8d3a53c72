"""What every benchmark command shares: a temporary workspace, progress on stderr,
and one JSON object as the last line of stdout (BENCHMARKS.md fixes these rules)."""

from __future__ import annotations

import gzip
import json
import signal
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.contrib.auth import get_user_model

from apps.workspaces.models import Workspace
from apps.workspaces.services import workspace_create, workspace_delete


@contextmanager
def temporary_workspace(label: str) -> Iterator[Workspace]:
    """A workspace of its own for one benchmark run, removed (with everything in it) at the end."""
    tag = uuid.uuid4().hex[:10]
    owner = get_user_model().objects.create_user(f"bench-{tag}", password=None)
    workspace = workspace_create(actor=owner, name=f"bench {label} {tag}", slug=f"bench-{label}-{tag}")
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
