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
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from apps.core.errors import ApplicationError
from apps.core.worker import celery_worker_command
from apps.documents.models import Document, DocumentStatus
from apps.documents.services import document_create, documents_ingest_many
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


def auroc(positives: list[float], negatives: list[float], *, empty: float | None = None) -> float | None:
    """P(a positive scores above a negative), ties counting half, to 4 places; `empty` without
    both kinds."""
    if not positives or not negatives:
        return empty
    pos, neg = np.asarray(positives), np.asarray(negatives)
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return round(float(wins / (len(pos) * len(neg))), 4)


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


def wait_settled(workspace: Workspace, timeout: float) -> None:
    """Until every document of the workspace is ready or failed (the worker ingests them)."""
    deadline = time.monotonic() + timeout
    pending = Document.objects.filter(workspace=workspace).exclude(status__in=["ready", "failed"])
    while (left := pending.count()) and time.monotonic() < deadline:
        progress(f"  {left} file(s) still ingesting")
        # Polled often near the end: a file settled between polls would count the wait as ingesting.
        time.sleep(0.05 if left < 5 else 0.5)
    if pending.exists():
        raise CommandError(f"{pending.count()} file(s) did not settle within {timeout:.0f} s; is a worker running?")


def record_id(record: dict) -> str:
    """A BEIR record's id (`id`, or `_id`)."""
    value = record.get("id", record.get("_id"))
    if value is None:
        raise CommandError(f"A record has neither “id” nor “_id”: {str(record)[:200]}")
    return str(value)


def document_text(record: dict) -> str:
    title, text = (record.get("title") or "").strip(), (record.get("text") or "").strip()
    return "\n\n".join(part for part in (title, text) if part)


def ingest_records(workspace: Workspace, records: list[dict], *, progress_every: int = 250) -> dict[str, list[str]]:
    """Every corpus record (title + text) as a file through the product's document_create, all of
    them ingested as one upload batch is (documents_ingest_many: one embedding stream), in this
    process; document id → the corpus ids it holds (identical texts share a document)."""
    corpus_ids_of: dict[str, list[str]] = defaultdict(list)
    started, counts = time.perf_counter(), {"settled": 0, "chunks": 0, "problems": 0}
    batch = uuid.uuid4()

    def created():
        for record in records:
            corpus_id = record_id(record)
            try:
                document, new = document_create(
                    workspace=workspace,
                    actor=None,
                    filename=f"{corpus_id}.txt",
                    data=document_text(record).encode("utf-8"),
                    enqueue=False,
                    batch=batch,
                )
            except ApplicationError as exc:
                counts["problems"] += 1
                progress(f"warning: corpus id {corpus_id} refused: {exc.message}")
                continue
            corpus_ids_of[str(document.pk)].append(corpus_id)
            if new:
                yield document.pk

    def settled(document) -> None:
        counts["settled"] += 1
        if document.status != DocumentStatus.READY:
            counts["problems"] += 1
            progress(f"warning: {document.filename} did not ingest: {document.error}")
        counts["chunks"] += document.chunk_count
        if counts["settled"] % progress_every == 0:
            elapsed = time.perf_counter() - started
            progress(f"ingest {counts['settled']}/{len(records)} docs, {counts['chunks']} chunks, {elapsed:.0f} s")

    documents_ingest_many(workspace=workspace, document_ids=created(), on_settled=settled)
    elapsed = time.perf_counter() - started
    progress(f"ingest {len(records)}/{len(records)} docs, {counts['chunks']} chunks, {elapsed:.0f} s")
    if counts["problems"]:
        progress(f"warning: {counts['problems']} corpus record(s) are not searchable")
    return dict(corpus_ids_of)
