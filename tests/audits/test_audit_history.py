"""The audit history: what each record holds, its filters, pagination, detail page and exports."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import time
import tracemalloc
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from apps.audits.models import AuditEvent, AuditRecord, record_hash
from apps.queries.services import query_answer
from tests.factories import AuditRecordFactory
from tests.queries.test_generation import LIGHTHOUSE, lighthouse  # noqa: F401 - the fixture


def record(workspace, question: str, *, risk="low", confidence=0.8, mode="verified", refused=False, verdicts=(), actor="mia"):
    """A record shaped like the ones answers leave (only the parts the history reads)."""
    claims = [{"text": f"claim {i}", "verdict": v, "faithful": v == "supports"} for i, v in enumerate(verdicts)]
    payload = {
        "question": question,
        "mode": mode,
        "gate": {"enabled": mode == "verified", "threshold": 0.5, "top_score": confidence, "passed": not refused},
        "stages": {"generate": {"provider": "local", "insufficient": refused, "answer": "an answer"}, "verify": {"claims": claims}},
        "trust": {"retrieval": 0.7, "agreement": 0.6, "grounding": 1.0, "confidence": confidence, "risk": risk},
        "duration_ms": 120,
    }
    return AuditRecordFactory(workspace=workspace, actor_label=actor, payload=payload)


@pytest.fixture
def history(personas):
    a = personas.workspace_a
    return [
        record(a, "How long is the Halvorsen bridge?", risk="low", confidence=0.9, verdicts=["supports", "supports"]),
        record(
            a, "Who built the bridges over the fjord?", risk="medium", confidence=0.6, verdicts=["supports", "not_judged"], actor="adam"
        ),
        record(a, "What is the orbital period of Triton?", risk="low", confidence=1.0, refused=True, actor="ci-bot key"),
        record(a, "When was the lighthouse automated?", risk="high", confidence=0.3, verdicts=["hallucinated_quote"]),
        record(a, "Is the bakery open on Sundays?", risk="medium", confidence=0.55, mode="naive", verdicts=["not_judged"]),
    ]


def shown(client, **params) -> list[int]:
    """The record numbers the history page lists for these filters, in order."""
    response = client.get(reverse("audit_list", args=["acme"]), params)
    assert response.status_code == 200, response.content
    return [int(n) for n in re.findall(r'<tr id="record-(\d+)"', response.content.decode())]


def test_an_answers_record_holds_the_whole_trace_and_is_filterable_by_what_the_page_shows(personas, lighthouse):  # noqa: F811
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question="How tall is the Skerryvore lighthouse?")
    saved = AuditRecord.objects.get(query_run_id=run.pk)
    payload = saved.payload
    assert payload["asked_by"] == {"user": "mia", "label": "mia"}
    assert payload["settings"]["gate_threshold"] == 0.25
    assert payload["settings"]["chunk_size"] == 800
    assert "threshold_override" in payload["settings"]
    assert payload["stages"]["retrieve"]["candidates"][0].keys() >= {"dense_rank", "dense_score", "keyword_rank", "keyword_score"}
    assert payload["rerank"]["reranker"]
    assert payload["rerank"]["scores"]
    assert payload["gate"]["passed"] is True
    assert payload["corrective"]["verdict"] in {"correct", "ambiguous"}
    assert payload["provider_attempts"][-1]["provider"] == "local"
    assert payload["sources"][0]["text"]
    assert payload["sources"][0]["first_page"] is None, "a text file has no pages"
    assert [s["name"] for s in payload["pipeline"]] == ["retrieve", "rerank", "correct", "gate", "generate", "verify", "score"]
    assert payload["duration_ms"] == run.duration_ms
    # The columns the history filters on follow from that payload.
    assert saved.question == run.question
    assert (saved.mode, saved.risk, saved.refused) == ("verified", run.risk, False)
    assert saved.confidence == pytest.approx(run.confidence)
    assert saved.verdicts == [c["verdict"] for c in run.claims]
    assert shown(personas.client("viewer"), q="Skerryvore", risk=run.risk) == [saved.sequence]


def test_each_filter_narrows_the_history_to_the_matching_records(personas, history):
    client = personas.client("viewer")
    assert shown(client) == [5, 4, 3, 2, 1]
    assert shown(client, risk="medium") == [5, 2]
    assert shown(client, refused="yes") == [3]
    assert shown(client, refused="no") == [5, 4, 2, 1]
    assert shown(client, mode="naive") == [5]
    assert shown(client, verdict="hallucinated_quote") == [4]
    assert shown(client, verdict="not_judged") == [5, 2]
    assert shown(client, actor="ADAM") == [2]
    assert shown(client, actor="ci-bot key") == [3]
    assert shown(client, risk="medium", mode="verified", verdict="supports") == [2]


def test_question_search_finds_other_forms_of_a_word_and_parts_of_words(personas, history):
    client = personas.client("viewer")
    assert shown(client, q="bridge") == [2, 1], "“bridges” is a form of “bridge”"
    assert shown(client, q="Halvor") == [1], "part of a word"
    assert shown(client, q="lighthouse automated") == [4]
    assert shown(client, q="submarine") == []


def test_date_range_includes_both_of_its_days(personas, history):
    client = personas.client("viewer")
    today = timezone.localdate()
    assert shown(client, date_from=today.isoformat(), date_to=today.isoformat()) == [5, 4, 3, 2, 1]
    assert shown(client, date_to=(today - dt.timedelta(days=1)).isoformat()) == []
    assert shown(client, date_from=(today + dt.timedelta(days=1)).isoformat()) == []
    response = client.get(reverse("audit_list", args=["acme"]), {"date_from": today.isoformat(), "date_to": "2000-01-01"})
    assert response.status_code == 400
    assert "The end date is before the start date." in response.content.decode()


def test_sorting_by_confidence(personas, history):
    client = personas.client("viewer")
    assert shown(client, sort="confidence") == [4, 5, 2, 1, 3]
    assert shown(client, sort="-confidence") == [3, 1, 2, 5, 4]
    assert shown(client, sort="oldest") == [1, 2, 3, 4, 5]


def test_pages_of_25_keep_the_filters(personas):
    for i in range(30):
        record(personas.workspace_a, f"Question number {i}", risk="high" if i % 2 else "low")
    record(personas.workspace_b, "Beta's own question", risk="high")
    client = personas.client("viewer")
    first = client.get(reverse("audit_list", args=["acme"]), {"risk": "high"}).content.decode()
    assert "<strong>15</strong> records" in first
    assert first.count('<tr id="record-') == 15
    assert shown(client) == list(range(30, 5, -1))
    assert shown(client, page=2) == [5, 4, 3, 2, 1]
    assert shown(client, page=9, risk="high") == [29 - 2 * i + 1 for i in range(15)], "past the end: the last page"
    everything = client.get(reverse("audit_list", args=["acme"])).content.decode()
    assert 'href="?page=2"' in everything
    assert "Beta" not in everything
    filtered = client.get(reverse("audit_list", args=["acme"]), {"q": "Question", "page": 1}).content.decode()
    assert 'href="?q=Question&amp;page=2"' in filtered, "the next page keeps the search"


def test_the_filters_answer_an_htmx_request_with_the_results_alone(personas, history):
    response = personas.client("viewer").get(reverse("audit_list", args=["acme"]), {"risk": "high"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="results">')
    assert "<form" not in body
    assert re.findall(r'<tr id="record-(\d+)"', body) == ["4"]


def test_csv_export_has_the_filtered_rows_and_is_recorded(personas, history):
    client = personas.client("viewer")
    response = client.get(reverse("audit_export", args=["acme", "csv"]), {"risk": "medium"})
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"].startswith("text/csv")
    assert re.match(r'attachment; filename="audit-acme-\d{8}-\d{6}\.csv"', response["Content-Disposition"])
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["sequence"], r["question"], r["risk"], r["verdicts"]) for r in rows] == [
        ("5", "Is the bakery open on Sundays?", "medium", "not_judged"),
        ("2", "Who built the bridges over the fjord?", "medium", "supports;not_judged"),
    ]
    assert rows[1]["asked_by"] == "adam"
    assert rows[1]["confidence"] == "0.6"
    assert rows[1]["claims"] == "2"
    assert rows[1]["hash"] == history[1].hash
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="audit.export")
    assert event.actor == personas.viewer.user
    assert event.data == {"format": "csv", "records": 2, "filters": {"risk": "medium", "sort": "newest"}}


def test_csv_export_defuses_spreadsheet_formulas(personas):
    record(personas.workspace_a, '=HYPERLINK("http://evil.example")')
    response = personas.client("viewer").get(reverse("audit_export", args=["acme", "csv"]))
    (row,) = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    assert row["question"] == '\'=HYPERLINK("http://evil.example")'


def test_json_export_holds_whole_records_that_can_be_verified_elsewhere(personas, history):
    response = personas.client("owner").get(reverse("audit_export", args=["acme", "json"]), {"verdict": "supports"})
    assert response["Content-Type"] == "application/json"
    exported = json.loads(b"".join(response.streaming_content))
    assert [r["sequence"] for r in exported] == [2, 1]
    for item in exported:
        fields = {k: item[k] for k in ("prev_hash", "sequence", "query_run_id", "actor_label", "payload")}
        fields["workspace_id"] = item["workspace"]
        assert record_hash(**fields) == item["hash"]


def test_an_unknown_export_format_is_refused(personas, history):
    response = personas.client("viewer").get(reverse("audit_export", args=["acme", "xlsx"]))
    assert response.status_code == 400
    assert "Unknown export format" in response.content.decode()
    assert not AuditEvent.objects.filter(action="audit.export").exists()


BULK_RECORDS = 100_000


def _bulk_insert(workspace, count: int) -> None:
    """Rows straight in SQL, fast; the memory test does not need a valid hash chain."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO audits_auditrecord (id, workspace_id, created_at, sequence, query_run_id, actor_label, payload, prev_hash, hash)
            SELECT gen_random_uuid(), %s, now(), g, gen_random_uuid(), 'bulk-loader',
                   jsonb_build_object(
                       'question', 'Bulk question number ' || g,
                       'mode', 'verified',
                       'stages', jsonb_build_object('generate', jsonb_build_object('answer', repeat('An answer sentence. ', 6),
                                                    'insufficient', false, 'provider', 'local'),
                                                    'verify', jsonb_build_object('claims', jsonb_build_array(jsonb_build_object('verdict', 'supports')))),
                       'trust', jsonb_build_object('risk', 'low', 'confidence', 0.8, 'retrieval', 0.7, 'agreement', 0.6, 'grounding', 1)),
                   repeat('0', 64), md5(g::text) || md5((-g)::text)
            FROM generate_series(1, %s) AS g
            """,
            [str(workspace.pk), count],
        )


def test_exporting_100000_records_streams_in_bounded_memory(personas):
    _bulk_insert(personas.workspace_a, BULK_RECORDS)
    started = time.monotonic()
    response = personas.client("viewer").get(reverse("audit_export", args=["acme", "csv"]))
    assert response.streaming
    sizes = []
    growth = peak_memory_growth(lambda: sizes.extend(len(piece) for piece in response.streaming_content))
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="audit.export")
    assert event.data["records"] == BULK_RECORDS
    assert sum(sizes) > 30_000_000, "the export is large"
    assert len(sizes) > 100, "it went out piece by piece, not as one body"
    assert max(sizes) < 200_000
    assert growth < 40_000_000, f"memory grew by {growth / 1e6:.1f} MB while streaming {sum(sizes) / 1e6:.0f} MB"
    assert time.monotonic() - started < 30


def peak_memory_growth(consume) -> int:
    """Bytes by which this process's peak memory rose while `consume` ran: the kernel's resident
    high-water mark, reset first (cheap); tracemalloc where that cannot be reset (slow)."""
    status = Path("/proc/self/status")
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        tracemalloc.start()
        try:
            consume()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    before = _status_kb(status, "VmRSS")
    consume()
    return (_status_kb(status, "VmHWM") - before) * 1024


def _status_kb(status: Path, key: str) -> int:
    return int(re.search(rf"^{key}:\s+(\d+) kB", status.read_text(), re.M).group(1))
