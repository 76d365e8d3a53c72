"""Redis stopped while people upload and ask: every upload and question is accepted (nothing
half-written, no 500), stays queued, and is done once Redis is back — by the scheduler's
reapers, with no restart of the web server or the worker.

The test runs a Redis, a web server (gunicorn) and a worker with its scheduler of its own, so
the session's broker is never disturbed; they share the test database."""

from __future__ import annotations

import httpx
import pytest
from django.conf import settings

from apps.audits.models import AuditEvent
from apps.documents.models import Chunk, Document, DocumentStatus
from apps.pipeline.text import chunk_text
from apps.queries.models import QueryRun, QueryStatus
from apps.workspaces.selectors import settings_get
from tests.conftest import wait_until, worker_env
from tests.live import LiveRedis, free_port, web_server, worker

pytestmark = pytest.mark.django_db(transaction=True)

REPORTS = {
    f"field-report-{i}.txt": " ".join(f"Station {i} logged {n * 3 % 17} storms in week {n} of the survey." for n in range(60 + i * 20))
    for i in range(4)
}


@pytest.fixture
def own_redis(tmp_path):
    server = LiveRedis(free_port(), tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def stack_env(redis_url: str, tmp_path) -> dict[str, str]:
    """The session's worker environment, on a Redis of the test's own, with reapers that run
    every second: documents re-sent after 5 s, the question after 15 s, so that it is answered
    from the documents rather than racing their ingestion on a busy machine."""
    return worker_env() | {
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "TRUSTRAG_VAR_DIR": str(tmp_path / "var"),
        "INGEST_REQUEUE_QUEUED_AFTER_S": "5",
        "QUERY_REQUEUE_QUEUED_AFTER_S": "15",
        "REAPER_INTERVAL_S": "1",
        "GROQ_API_KEY": "",
        "ZHIPUAI_API_KEY": "",
    }


def test_uploads_and_questions_during_a_redis_outage_are_kept_and_done_when_it_returns(personas, own_redis, tmp_path):
    env = stack_env(own_redis.url, tmp_path)
    workspace = personas.workspace_a
    headers = {"Authorization": f"Bearer {personas.api_key('member')}"}
    api = f"/api/v1/workspaces/{workspace.pk}"
    with web_server(env, tmp_path / "web.log") as url, worker(env, tmp_path / "worker.log", beat=True):
        http = httpx.Client(base_url=url, headers=headers, timeout=30)
        own_redis.stop()

        uploads = [http.post(f"{api}/documents/", files={"files": (name, text.encode())}) for name, text in REPORTS.items()]
        # The gate is opened: the reports look alike, and what is tested is the outage, not the gate.
        question = {"question": "How many storms did station 2 log?", "async": True, "threshold_override": 0}
        asked = http.post(f"{api}/queries/", json=question)

        assert [r.status_code for r in uploads] == [201] * len(REPORTS), [r.text for r in uploads]
        assert max(r.elapsed.total_seconds() for r in [*uploads, asked]) < 5, "a refused publish fails fast"
        assert {r.json()["results"][0]["document"]["status"] for r in uploads} == {"queued"}
        assert asked.status_code == 202, asked.text
        assert asked.json()["status"] == "queued"
        assert Document.objects.filter(workspace=workspace).count() == len(REPORTS), "each upload is stored once"
        assert AuditEvent.objects.filter(workspace=workspace, action="document.upload").count() == len(REPORTS)

        own_redis.start()
        wait_until(
            lambda: not Document.objects.filter(workspace=workspace).exclude(status=DocumentStatus.READY).exists(),
            timeout=150,
            what="every upload to be ingested once Redis is back",
        )
        run = wait_until(
            lambda: QueryRun.objects.filter(pk=asked.json()["id"], status__in=[QueryStatus.DONE, QueryStatus.FAILED]).first(),
            timeout=90,
            what="the question to be answered",
        )
        health = http.get("/healthz")

    assert run.status == QueryStatus.DONE, run.error
    assert run.claims, "answered from the documents ingested after the outage"
    options = settings_get(workspace=workspace)
    for document in Document.objects.filter(workspace=workspace):
        expected = chunk_text(REPORTS[document.filename], size=options.chunk_size, overlap=options.chunk_overlap)
        assert document.chunk_count == len(expected) == Chunk.objects.filter(document=document).count()
    assert Document.objects.filter(workspace=workspace).count() == len(REPORTS)
    assert health.json()["redis"]["ok"] is True, "the web server reconnected by itself"
    log = (tmp_path / "web.log").read_text()
    assert "not queued, the broker is unreachable" in log
    assert " 500 " not in log
    assert own_redis.url != settings.REDIS_URL, "the session broker was never stopped"
