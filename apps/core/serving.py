"""How the web server is sized on the machine it runs on: gunicorn processes, threads in each,
and torch's threads in each process. One place, read by trustrag_site/gunicorn_conf.py, so
`make run`, `make load` and the Docker image serve alike.

Answers run in the web process (a question is answered within its request), so the answer rate is
bounded by CPU. The plan below is what `make load` measured on a 2-core machine (README, "Load"):
one process of 8 threads answered 29.9 a second, two processes 17.9–18.8 (the database, the broker
and the worker need the other core); 4 or 16 threads did worse than 8; torch on one thread a process
beat two (a question is a few tokens: more threads a call only contend with the other requests).
So one process per two cores, 8 threads each, torch on one thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

THREADS_PER_PROCESS = 8


@dataclass(frozen=True)
class WebPlan:
    workers: int
    threads: int
    torch_threads: int


def cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    return len(os.sched_getaffinity(0))


def web_plan(workers: int = 0, threads: int = 0, torch_threads: int = 0, cpus: int | None = None) -> WebPlan:
    """The measured plan for `cpus` cores, with any value that is set (not 0) taken as given."""
    cpus = cpus or cores()
    return WebPlan(
        workers=workers or max(1, cpus // 2),
        threads=threads or THREADS_PER_PROCESS,
        torch_threads=torch_threads or 1,
    )


def configured_web_plan() -> WebPlan:
    from django.conf import settings

    return web_plan(settings.WEB_WORKERS, settings.WEB_THREADS, settings.WEB_TORCH_THREADS)
