"""Questions as QueryRuns answered by the real Celery worker: live stages, the streamed answer,
the asynchronous API, and `manage.py ask`."""

from __future__ import annotations

import html
import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.audits.models import AuditRecord
from apps.queries.models import QueryRun
from apps.queries.services import _Progress, query_run_create, query_run_execute
from apps.workspaces.services import settings_providers_update
from tests.conftest import wait_until
from tests.fake_services import answer_json
from tests.queries.test_generation import LIGHTHOUSE, TALL, lighthouse  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)

LONG_ANSWER = (
    "Skerryvore's tower is 48 metres tall, which makes it the tallest lighthouse in Scotland; "
    "it stands on a reef off the west coast and was built by Alan Stevenson between 1838 and 1844."
)


def test_the_answer_page_shows_stages_and_streams_the_answer_before_the_claims(personas, lighthouse, fake_llm, celery_worker):  # noqa: F811
    settings_providers_update(
        workspace=personas.workspace_a, actor=personas.owner, provider_order=["groq"], keys={"groq": "gsk_workerkey0004"}, clear=set()
    )
    fake_llm.script(
        "groq", {"content": answer_json(("Skerryvore's tower is 48 metres tall.", 1, TALL), answer=LONG_ANSWER), "chunk_delay": 0.12}
    )
    client = personas.client("member")
    response = client.post(reverse("ask", args=["acme"]), {"question": "How tall is the Skerryvore lighthouse?", "mode": "verified"})
    page_url = response["Location"]

    fragments = []

    def streaming():
        fragment = client.get(page_url, HTTP_HX_REQUEST="true").content.decode()
        fragments.append(fragment)
        return 'id="partial-answer">Skerryvore' in fragment and 'data-status="running"' in fragment

    live = wait_until(streaming, interval=0.1, timeout=60, what="the answer to stream")
    assert live
    streamed = html.unescape(fragments[-1].split('id="partial-answer">')[1].split("</p>")[0])
    assert LONG_ANSWER.startswith(streamed)
    assert len(streamed) < len(LONG_ANSWER), "seen while the provider was still writing"
    assert "stage-done" in fragments[-1]
    assert "hx-trigger" in fragments[-1], "the page keeps polling while the run is live"

    run = wait_until(lambda: QueryRun.objects.filter(workspace=personas.workspace_a, status="done").first(), what="the run to finish")
    final = client.get(page_url, HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in final
    said = final.split('id="final-answer">')[1].split("</p>")[0]
    assert html.unescape(re.sub(r'<a class="cite"[^>]*>\[\d+\]</a>', "", said)) == LONG_ANSWER, "the whole answer, with its citation marks"
    assert 'class="cite"' in said
    assert "verdict-" in final
    assert run.attempts[0]["provider"] == "groq"
    assert run.attempts[0]["key_source"] == "workspace"
    assert [s["name"] for s in run.stages] == list(QueryRun.STAGES)
    assert fake_llm.calls("groq")[0]["authorization"] == "Bearer gsk_workerkey0004"


def test_the_api_answers_asynchronously_with_a_url_to_poll(personas, lighthouse, celery_worker):  # noqa: F811
    headers = {"HTTP_AUTHORIZATION": f"Token {personas.token('member')}"}
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    body = {"query": "When was the Skerryvore lighthouse automated?", "async": True}
    response = personas.client("member").__class__().post(url, body, content_type="application/json", **headers)
    assert response.status_code == 202
    accepted = response.json()
    assert accepted["status"] in {"queued", "running", "done"}
    assert response["Location"] == accepted["url"] == reverse("api_query", args=[personas.workspace_a.pk, accepted["id"]])

    def finished():
        polled = personas.client("member").__class__().get(response["Location"], **headers).json()
        return polled if polled["status"] == "done" else None

    done = wait_until(finished, what="the worker to answer")
    assert any("1972" in c["quote"] for c in done["claims"])
    assert done["refusal_triggered"] is False
    assert done["confidence_score"] == done["confidence"]
    assert done["hallucination_risk"] in {"Low", "Medium", "High"}
    assert done["audit_id"] == str(AuditRecord.objects.get(query_run_id=done["id"]).pk)


def test_a_run_is_answered_once_even_if_its_message_is_delivered_twice(personas, lighthouse):  # noqa: F811
    run = query_run_create(workspace=personas.workspace_a, actor=None, question="How tall is the Skerryvore lighthouse?")
    first = query_run_execute(workspace=personas.workspace_a, run_id=run.pk)
    again = query_run_execute(workspace=personas.workspace_a, run_id=run.pk)
    assert first.status == again.status == "done"
    assert AuditRecord.objects.filter(query_run_id=run.pk).count() == 1


def test_ask_command_prints_the_full_result_as_json(personas, lighthouse):  # noqa: F811
    out = StringIO()
    call_command("ask", "--workspace", "acme", "How tall is the Skerryvore lighthouse?", stdout=out)
    result = json.loads(out.getvalue())
    assert {"answer", "claims", "sources", "confidence", "risk", "refusal", "provider_attempts", "audit_id"} <= set(result)
    assert any("48 metres" in c["quote"] and c["verdict"] for c in result["claims"])
    assert result["provider_attempts"][-1]["provider"] == "local"
    assert result["refusal"] is False
    assert AuditRecord.objects.filter(pk=result["audit_id"], workspace=personas.workspace_a).exists()
    assert LIGHTHOUSE[result["claims"][0]["start"] : result["claims"][0]["end"]] == result["claims"][0]["quote"]


def test_ask_command_names_a_missing_workspace(db):
    with pytest.raises(CommandError, match="nowhere"):
        call_command("ask", "--workspace", "nowhere", "Anything?", stdout=StringIO())


@pytest.mark.parametrize(("flush_every_s", "fewest", "most"), [(0, len(QueryRun.STAGES), 99), (3600, 0, 0)])
def test_progress_is_written_at_most_every_flush_interval_and_a_quick_answer_writes_only_its_result(
    personas,
    lighthouse,  # noqa: F811
    monkeypatch,
    flush_every_s,
    fewest,
    most,
):
    monkeypatch.setattr(_Progress, "FLUSH_EVERY_S", flush_every_s)
    run = query_run_create(workspace=personas.workspace_a, actor=personas.member, question="How tall is the Skerryvore lighthouse?")
    with CaptureQueriesContext(connection) as queries:
        done = query_run_execute(workspace=personas.workspace_a, run_id=run.pk)
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('UPDATE "queries_queryrun"')]
    progress = [sql for sql in updates if sql.startswith('UPDATE "queries_queryrun" SET "stages"')]
    assert fewest <= len(progress) <= most, "flushing always: every stage is written as it completes; an hour apart: none"
    assert done.status == "done"
    assert [s["name"] for s in QueryRun.objects.get(pk=run.pk).stages] == list(QueryRun.STAGES), "the result holds every stage"
