"""The web server is sized in one place (apps/core/serving.py) and every way of serving reads it:
`make run` (manage.py serve), `make load` and the Docker image all start gunicorn with
trustrag_site/gunicorn_conf.py, which takes the plan, or WEB_WORKERS / WEB_THREADS /
WEB_TORCH_THREADS where they are set."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest
from django.conf import settings

from apps.core.serving import WebPlan, memory_bytes, web_plan, worker_torch_threads
from tests.conftest import stop_process
from tests.live import free_port

CONFIG_PROBE = "import trustrag_site.gunicorn_conf as c; print(c.workers, c.threads)"


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WEB_")}
    return subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, env=clean | env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("cpus", "plan"),
    [(1, WebPlan(1, 8, 1)), (2, WebPlan(1, 8, 1)), (3, WebPlan(1, 8, 1)), (4, WebPlan(2, 8, 1)), (16, WebPlan(8, 8, 1))],
)
def test_the_plan_is_a_process_per_two_cores_of_eight_threads_with_torch_on_one(cpus, plan):
    assert web_plan(cpus=cpus) == plan


def test_a_value_that_is_set_is_taken_as_given_and_the_rest_comes_from_the_plan():
    assert web_plan(workers=3, cpus=2) == WebPlan(3, 8, 1)
    assert web_plan(threads=2, torch_threads=4, cpus=2) == WebPlan(1, 2, 4)


def test_the_gunicorn_config_serves_the_plan_for_this_machines_cores():
    probe = _run(CONFIG_PROBE)
    assert probe.returncode == 0, probe.stderr
    plan = web_plan()
    assert probe.stdout.split() == [str(plan.workers), str(plan.threads)]


def test_the_gunicorn_config_takes_the_web_variables():
    probe = _run(CONFIG_PROBE, WEB_WORKERS="3", WEB_THREADS="5")
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["3", "5"]


def test_a_bad_web_variable_stops_the_config_with_a_message_naming_it():
    probe = _run(CONFIG_PROBE, WEB_WORKERS="many")
    assert probe.returncode != 0
    assert "WEB_WORKERS" in probe.stderr


def _torch_threads_after(hook: str, **env: str) -> str:
    """torch's thread count printed by a fresh process that set two, then ran `hook` (module `c`)."""
    probe = _run(f"import torch; torch.set_num_threads(2); {hook}; print(torch.get_num_threads())", **env)
    assert probe.returncode == 0, probe.stderr
    return probe.stdout.split()[-1]


def test_each_process_sets_torchs_threads_as_it_starts():
    assert _torch_threads_after("import trustrag_site.gunicorn_conf as c; c.post_worker_init(None)", WEB_TORCH_THREADS="1") == "1"


def test_gunicorn_started_with_the_config_runs_the_processes_it_names():
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "gunicorn",
        "trustrag_site.wsgi",
        "--config",
        "python:trustrag_site.gunicorn_conf",
        "--bind",
        f"127.0.0.1:{port}",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEB_")} | {"WEB_WORKERS": "2", "WEB_THREADS": "3"}
    server = subprocess.Popen(cmd, cwd=settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stderr.read().decode()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code in (200, 503):
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "gunicorn did not answer within 60 s"
            time.sleep(0.3)
        children = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 2
    finally:
        stop_process(server)


def test_the_worker_starts_torch_on_one_thread_unless_set():
    assert worker_torch_threads() == 1
    assert worker_torch_threads(3) == 3


def test_the_celery_worker_sets_torchs_threads_before_any_task():
    assert _torch_threads_after("import trustrag_site.celery as c; c._size_torch()", WORKER_TORCH_THREADS="0") == "1"
    probe = _run("import trustrag_site.celery as c; c._size_torch()", WORKER_TORCH_THREADS="lots")
    assert probe.returncode != 0
    assert "WORKER_TORCH_THREADS" in probe.stderr


def test_the_memory_is_the_machines_unless_a_container_limit_is_lower(tmp_path):
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    unlimited_v2, unlimited_v1, limited = tmp_path / "memory.max", tmp_path / "limit_in_bytes", tmp_path / "limited"
    unlimited_v2.write_text("max\n")
    unlimited_v1.write_text("9223372036854771712\n")
    limited.write_text(f"{2 * 1024**3}\n")
    assert memory_bytes((str(tmp_path / "absent"),)) == physical
    assert memory_bytes((str(unlimited_v2), str(unlimited_v1))) == physical
    assert memory_bytes((str(unlimited_v2), str(limited))) == min(physical, 2 * 1024**3)
