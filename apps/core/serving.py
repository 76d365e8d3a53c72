"""How the web server is sized on the machine it runs on: gunicorn processes, threads in each,
and torch's threads in each process. One place, read by trustrag_site/gunicorn_conf.py, so
`make run`, `make load` and the Docker image serve alike.

Answers run in the web process (a question is answered within its request), so the answer rate is
bounded by CPU. The plan below is what `make load` measured on a 2-core machine (docs/operations.md, "Load"):
one process of 8 threads with torch on one thread answered 28.0 a second, two processes 25.4, torch
on two threads 25.4 (the database, the broker and the worker need the other core; a question is a
few tokens, so more torch threads a call only contend with the other requests); 4 or 16 threads
did worse than 8. So one process per two cores, 8 threads each, torch on one thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

THREADS_PER_PROCESS = 8


@dataclass(frozen=True)
class WebPlan:
    workers: int
    threads: int
    torch_threads: int


def cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    return len(os.sched_getaffinity(0))


# Where a container's memory limit is kept: cgroup v2, then v1 (a huge number there means none).
CGROUP_MEMORY_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def memory_bytes(limits: tuple[str, ...] = CGROUP_MEMORY_LIMITS) -> int:
    """The memory this process may use: the machine's, or its container's limit when lower."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in limits:
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            return min(physical, int(text))
    return physical


def web_plan(workers: int = 0, threads: int = 0, torch_threads: int = 0, cpus: int | None = None) -> WebPlan:
    """The measured plan for `cpus` cores, with any value that is set (not 0) taken as given."""
    cpus = cpus or cores()
    return WebPlan(
        workers=workers or max(1, cpus // 2),
        threads=threads or THREADS_PER_PROCESS,
        torch_threads=torch_threads or 1,
    )


def configured_web_plan(workers: int = 0, threads: int = 0, torch_threads: int = 0) -> WebPlan:
    """The plan with the values given here first, then WEB_WORKERS / WEB_THREADS / WEB_TORCH_THREADS."""
    from django.conf import settings

    return web_plan(workers or settings.WEB_WORKERS, threads or settings.WEB_THREADS, torch_threads or settings.WEB_TORCH_THREADS)


def worker_torch_threads(torch_threads: int = 0) -> int:
    """torch's threads in a Celery worker process before its first task: one, unless set. Each
    ingestion then sizes its own batches (ingestion_lanes)."""
    return torch_threads or 1


@dataclass(frozen=True)
class Lanes:
    """How an ingestion runs its next embedding batches: `batches` side by side, each on
    `torch_threads` of torch."""

    batches: int
    torch_threads: int


def ingestion_lanes(under_way: int, torch_threads: int = 0, cpus: int | None = None) -> Lanes:
    """An ingestion's share of the cores, with `under_way` ingestions of this process between
    their claim and their write at that moment (itself included; a parse takes a core as well):
    that many batches side by side, each on one torch thread. Two one-thread batches beat one
    batch on two threads: the WARN report PDF alone (111 chunks) ingested in 5.05 / 5.31 s against
    5.38 / 5.55 s (bench_ingest, alternate runs), and earlier 6.1-6.3 s against 10.1 s with
    torch on one thread and one batch at a time. With WORKER_TORCH_THREADS set, one batch at a
    time on that many threads. Measured with bench_ingest on 2 cores (docs/benchmarks.md): with torch on both
    cores in each of the worker's two threads, the calls contended (15.2 s against 14.2 s); one
    pool of batches shared by the documents did no better (14.5 s)."""
    if torch_threads:
        return Lanes(batches=1, torch_threads=torch_threads)
    return Lanes(batches=max(1, (cpus or cores()) // max(1, under_way)), torch_threads=1)


def configured_worker_torch_threads() -> int:
    from django.conf import settings

    return worker_torch_threads(settings.WORKER_TORCH_THREADS)


def configured_ingestion_lanes(under_way: int) -> Lanes:
    from django.conf import settings

    return ingestion_lanes(under_way, settings.WORKER_TORCH_THREADS)
