"""How the web server is sized on the machine it runs on: gunicorn processes, threads in each,
and torch's threads in each process. One place, read by trustrag_site/gunicorn_conf.py, so
`make run`, `make load` and the Docker image serve alike.

Answers run in the web process (a question is answered within its request), so the answer rate is
bounded by CPU. The plan below is what `make load` measured on a 2-core machine (README, "Load"):
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
    ingestion then sizes its own calls (ingestion_torch_threads)."""
    return torch_threads or 1


def ingestion_torch_threads(embedding_now: int, torch_threads: int = 0, cpus: int | None = None) -> int:
    """torch's threads for an ingestion's next embedding batch, with `embedding_now` ingestions of
    this process under way at that moment (itself included, each counted from its claim to its
    write, since its parse takes a core as well): as set, or else the cores shared among them. torch's thread count is the calling thread's own (OpenMP's per-thread setting), so
    each ingestion sets its own. Measured with bench_ingest on 2 cores (README): the WARN report
    PDF (111 chunks) alone, 6.1-6.3 s against 10.1 s with torch fixed on one thread; the 19 shared
    files, 12.9-13.2 s either way (the worker's two threads keep both cores busy until the last
    document). With torch on both cores in each of the two threads, the calls contended (15.2 s
    against 14.2 s); one pool of batches shared by the documents did no better (14.5 s).
    WORKER_TORCH_THREADS fixes the count instead."""
    if torch_threads:
        return torch_threads
    return max(1, (cpus or cores()) // max(1, embedding_now))


def configured_worker_torch_threads() -> int:
    from django.conf import settings

    return worker_torch_threads(settings.WORKER_TORCH_THREADS)


def configured_ingestion_torch_threads(embedding_now: int) -> int:
    from django.conf import settings

    return ingestion_torch_threads(embedding_now, settings.WORKER_TORCH_THREADS)
