"""Load on loopback: concurrent API clients asking questions for a fixed time, then concurrent
uploads until every one is ingested. Runs its own web server (gunicorn, as `make run` does) and
uses the running worker or starts one; everything happens in a temporary workspace."""

from __future__ import annotations

import logging
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.apikeys.services import apikey_create
from apps.core.serving import WebPlan, configured_web_plan
from apps.documents.management.commands.seed_demo import DEMO_DIR
from apps.documents.models import Document, DocumentStatus
from apps.documents.services import document_create, document_ingest
from bench.common import celery_worker, emit, progress, temporary_workspace

QUESTIONS = [
    "What happens when a quote cannot be located?",
    "Who can change a workspace's settings?",
    "How is the audit trail protected against tampering?",
    "What does the confidence gate do with weak evidence?",
    "Which roles can upload documents?",
]


class Command(BaseCommand):
    help = "Concurrent questions for a fixed time (p50/p95, server errors), then concurrent uploads until all are ready."

    def add_arguments(self, parser):
        parser.add_argument("--clients", type=int, default=20)
        parser.add_argument("--seconds", type=float, default=60)
        parser.add_argument("--uploads", type=int, default=50)
        parser.add_argument("--workers", type=int, default=0, help="gunicorn processes (0: the plan `make run` serves with)")
        parser.add_argument("--threads", type=int, default=0, help="threads per process (0: the plan)")
        parser.add_argument("--torch-threads", type=int, default=0, help="torch threads per process (0: the plan)")
        parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the uploads to be ingested")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, clients, seconds, uploads, workers, threads, torch_threads, timeout, json_path, **options):
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
        plan = configured_web_plan(workers, threads, torch_threads)
        with celery_worker() as worker_note, temporary_workspace("load") as workspace, _web_server(plan) as url:
            progress(
                f"worker: {worker_note}; web server {url}: {plan.workers} process(es) × {plan.threads} threads, torch {plan.torch_threads}"
            )
            demo = sorted(DEMO_DIR.glob("*.md"))
            if not demo:
                raise CommandError(f"No demo documents in {DEMO_DIR}: the questions would have nothing to be answered from.")
            for path in demo:
                document, _ = document_create(workspace=workspace, actor=None, filename=path.name, data=path.read_bytes(), enqueue=False)
                document_ingest(workspace=workspace, document_id=document.pk)
            keys = [apikey_create(workspace=workspace, actor=None, name=f"load {i}", role="member")[1] for i in range(max(clients, 1))]
            api = f"{url}/api/v1/workspaces/{workspace.pk}"
            # Every process loads its embedding model before the clock starts: as many questions at
            # once as the server has threads reach them all.
            _all_at_once(lambda i: _ask(api, keys[i % len(keys)], QUESTIONS[0]), plan.workers * plan.threads)
            progress(f"{clients} client(s) asking for {seconds:g} s")
            asked = _question_load(api, keys, seconds)
            progress(f"{uploads} concurrent upload(s)")
            uploaded = _upload_load(api, keys, uploads, workspace, timeout)
        result = {"serving": asdict(plan), "questions": asked, "uploads": uploaded}
        self.stdout.write(_summary(result, clients, seconds))
        emit(result, json_path, self.stdout)


def _ask(api: str, key: str, question: str) -> httpx.Response:
    return httpx.post(f"{api}/queries/", json={"question": question}, headers={"Authorization": f"Bearer {key}"}, timeout=180)


def _question_load(api: str, keys: list[str], seconds: float) -> dict:
    results: list[tuple[int, float, bool]] = []  # status, seconds, refused
    deadline = time.monotonic() + seconds

    def client(i: int) -> None:
        n = i
        while time.monotonic() < deadline:
            started = time.perf_counter()
            refused = False
            try:
                response = _ask(api, keys[i], QUESTIONS[n % len(QUESTIONS)])
                status = response.status_code
                refused = status == 201 and response.json().get("refusal") is not None
            except httpx.TransportError:
                status = 0
            results.append((status, time.perf_counter() - started, refused))
            n += 1

    _all_at_once(client, len(keys))
    latencies = sorted(ms for status, ms, _ in results if status == 201)
    return {
        "clients": len(keys),
        "seconds": seconds,
        "requests": len(results),
        "answered": len(latencies),
        "refused": sum(refused for *_, refused in results),
        "client_errors": sum(400 <= status < 500 for status, *_ in results),
        "server_errors": sum(status >= 500 or status == 0 for status, *_ in results),
        "per_s": round(len(results) / seconds, 2),
        "p50_ms": round(statistics.median(latencies) * 1000) if latencies else None,
        "p95_ms": round(_percentile(latencies, 0.95) * 1000) if latencies else None,
    }


def _upload_load(api: str, keys: list[str], count: int, workspace, timeout: float) -> dict:
    statuses: list[int] = []
    started = time.monotonic()

    def upload(i: int) -> None:
        text = " ".join(f"Load report {i}, line {n}: gauge {n % 7} read {i * n % 113} units at dawn." for n in range(40))
        files = {"files": (f"load-{i:03d}.txt", text.encode())}
        try:
            response = httpx.post(f"{api}/documents/", files=files, headers={"Authorization": f"Bearer {keys[i % len(keys)]}"}, timeout=120)
            statuses.append(response.status_code)
        except httpx.TransportError:
            statuses.append(0)

    _all_at_once(upload, count)
    accepted = time.monotonic() - started
    uploads = Document.objects.filter(workspace=workspace, filename__startswith="load-")
    deadline = time.monotonic() + timeout
    while uploads.exclude(status__in=[DocumentStatus.READY, DocumentStatus.FAILED]).exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    return {
        "sent": count,
        "accepted": statuses.count(201),
        "server_errors": sum(status >= 500 or status == 0 for status in statuses),
        "ready": uploads.filter(status=DocumentStatus.READY).count(),
        "failed": uploads.filter(status=DocumentStatus.FAILED).count(),
        "accept_s": round(accepted, 2),
        "all_ready_s": round(time.monotonic() - started, 2),
    }


def _all_at_once(work, count: int) -> None:
    """`count` threads released together by a barrier, joined."""
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        barrier.wait()
        work(i)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def _summary(result: dict, clients: int, seconds: float) -> str:
    q, u = result["questions"], result["uploads"]
    return (
        f"questions: {clients} clients × {seconds:g} s: {q['requests']} requests, {q['answered']} answered "
        f"({q['refused']} of them refused), "
        f"{q['server_errors']} server errors, p50 {q['p50_ms']} ms, p95 {q['p95_ms']} ms, {q['per_s']}/s\n"
        f"uploads: {u['sent']} at once: {u['accepted']} accepted in {u['accept_s']} s, {u['server_errors']} server errors, "
        f"{u['ready']} ready ({u['failed']} failed) after {u['all_ready_s']} s\n"
    )


@contextmanager
def _web_server(plan: WebPlan):
    """gunicorn on a free loopback port, on this process's database and Redis, answering with
    the local provider and without the API rate limit (the load is the point)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = settings.DATABASES["default"]
    auth = f"{db['USER']}:{db['PASSWORD']}@" if db["USER"] else ""
    env = os.environ | {
        "DATABASE_URL": f"postgresql://{auth}{'' if db['HOST'].startswith('/') else db['HOST']}/{db['NAME']}"
        + (f"?host={db['HOST']}" if db["HOST"].startswith("/") else ""),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "SECRET_KEY": settings.SECRET_KEY,
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "API_THROTTLE_RATE": "1000000/min",
        "GROQ_API_KEY": "",
        "ZHIPUAI_API_KEY": "",
        "DJANGO_SETTINGS_MODULE": "trustrag_site.settings",
        "WEB_WORKERS": str(plan.workers),
        "WEB_THREADS": str(plan.threads),
        "WEB_TORCH_THREADS": str(plan.torch_threads),
    }
    cmd = [sys.executable, "-m", "gunicorn", "trustrag_site.wsgi", "--config", "python:trustrag_site.gunicorn_conf"]
    cmd += ["--bind", f"127.0.0.1:{port}", "--timeout", "180", "--backlog", "512", "--log-level", "warning"]
    process = subprocess.Popen(cmd, cwd=settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=sys.stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_serving(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=60)


def _wait_serving(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CommandError("the web server exited at start")
        try:
            httpx.get(f"{url}/accounts/login/", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise CommandError("the web server did not start within 60 s")
