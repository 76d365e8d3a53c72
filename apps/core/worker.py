from __future__ import annotations

import sys


def celery_worker_command(*, pool: str = "threads", concurrency: int = 2, loglevel: str = "INFO", extra: tuple[str, ...] = ()) -> list[str]:
    """The command line of a Celery worker of this project, run by this Python."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "trustrag_site",
        "worker",
        "--pool",
        pool,
        "--concurrency",
        str(concurrency),
        "--loglevel",
        loglevel,
        *extra,
    ]
