"""Parsing in processes of its own. pypdf is pure Python: while it reads a PDF's text layer it holds
the interpreter lock, and the worker thread embedding another document beside it waits for the
lock between torch calls. In a process of its own it takes a core and nothing else
(bench_ingest on the shared documents, 2 cores: median 17.5 s end to end against 18.8 s in the
worker's threads, docs/benchmarks.md).

The pool is made on first use, of `spawn`ed processes (a fork of a worker holding torch's threads
is not safe), each importing only the parsers. A pool whose process died (a parser that crashed or
was killed) is replaced, and the file is read in the calling process instead: nothing is lost. A
parser process whose parent is gone (a worker SIGKILLed) exits within a second rather than linger."""

from __future__ import annotations

import atexit
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_pools: dict[int, ProcessPoolExecutor] = {}


def run(processes: int, function: Callable[..., T], *args) -> T:
    """function(*args) in one of `processes` parser processes (in this one when 0). `function`
    and its arguments must pickle; what it raises is raised here."""
    if processes <= 0:
        return function(*args)
    pool = _pool(processes)
    try:
        return pool.submit(function, *args).result()
    except BrokenProcessPool:
        _discard(processes, pool)
        return function(*args)


def warm(processes: int) -> None:
    """Start the `processes` parser processes now, each with the parsers imported, so that the
    first PDF after a worker starts does not wait for them (a spawn and its imports take ~0.4 s)."""
    if processes > 0:
        pool = _pool(processes)
        for future in [pool.submit(_ready) for _ in range(processes)]:
            future.result()


def _ready() -> int:
    import apps.pipeline.parsing.pdf  # noqa: F401 (what a parser process is there to run)

    return os.getpid()


def _pool(processes: int) -> ProcessPoolExecutor:
    with _lock:
        pool = _pools.get(processes)
        if pool is None:
            pool = _pools[processes] = ProcessPoolExecutor(
                max_workers=processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_watch_parent,
                initargs=(os.getpid(),),
            )
        return pool


def _watch_parent(parent: int, every_s: float = 0.5) -> None:
    """In a parser process: exit once the process that started it is gone (its queue never closes
    by itself, since this process holds both of its ends)."""

    def watch():
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _discard(processes: int, pool: ProcessPoolExecutor) -> None:
    with _lock:
        if _pools.get(processes) is pool:
            del _pools[processes]
    pool.shutdown(wait=False, cancel_futures=True)


@atexit.register
def shutdown() -> None:
    """Stop the parser processes (at exit, or when a test wants none left)."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)
