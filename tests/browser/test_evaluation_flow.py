"""An evaluation run in a real browser: a member uploads a tiny set, starts a run, watches the
progress bar (htmx polling) reach done, and sees the metrics and the server-drawn sweep chart.
A real Celery worker asks the questions through the real pipeline."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from apps.documents.services import document_create, document_ingest
from apps.evals.models import EvalRun
from tests.browser.conftest import log_in, screenshot
from tests.conftest import wait_until

pytestmark = [pytest.mark.django_db(transaction=True)]

QUESTIONS = [
    {"question": "When does the Rye Street bakery open?", "answerable": True, "expected_answer": "six in the morning"},
    {"question": "Which planet does Triton orbit?", "answerable": True, "expected_answer": "Neptune"},
    {"question": "What is the boiling point of mercury?", "answerable": False},
    {"question": "Who won the 1998 football world cup?", "answerable": False},
]
DOCUMENTS = {
    "bakery.txt": "The Rye Street bakery opens at six in the morning. Its owner is Mara Lind.",
    "moons.txt": "Triton is the largest moon of Neptune. It orbits in the direction opposite to Neptune's rotation.",
}

# Polled from the page itself: the progress as the browser shows it, each time htmx swaps it.
RUN_STATE = """() => {
  const body = document.getElementById("run-body");
  const bar = body && body.querySelector("progress");
  return body ? {status: body.dataset.status, value: bar ? bar.value : null, max: bar ? bar.max : null} : null;
}"""


def test_member_runs_an_evaluation_and_sees_progress_reach_done_and_the_chart(personas, password, page, celery_worker, request):
    for name, text in DOCUMENTS.items():
        document, _ = document_create(workspace=personas.workspace_a, actor=None, filename=name, data=text.encode(), enqueue=False)
        document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    log_in(page, personas.member.user.username, password)
    page.goto("/w/acme/evaluations/")
    page.get_by_label("File (.jsonl, .csv or SQuAD 2.0 .json)").set_input_files(
        {"name": "tiny.jsonl", "mimeType": "application/jsonl", "buffer": "\n".join(json.dumps(q) for q in QUESTIONS).encode()}
    )
    page.get_by_role("button", name="Upload set").click()
    expect(page.locator(".messages li.success")).to_have_text("Evaluation set “tiny” added with 4 questions.")
    expect(page.locator("#eval-questions tbody tr")).to_have_count(4)

    page.get_by_role("button", name="Run evaluation").click()
    expect(page.get_by_role("heading", name="Evaluation of “tiny”")).to_be_visible()
    page.evaluate("window.__sameDocument = true")
    seen: list[dict] = []

    def settled() -> bool:
        state = page.evaluate(RUN_STATE)
        seen.append(state)
        return state is not None and state["status"] in ("done", "failed")

    wait_until(settled, timeout=180, interval=0.2, what="the evaluation run to settle")
    run = EvalRun.objects.get()
    assert seen[-1]["status"] == "done", run.error
    assert seen[-1]["value"] == seen[-1]["max"] == 4
    assert any(s["status"] in ("queued", "running") for s in seen), f"the run was never seen in progress: {seen[:3]}"
    assert page.evaluate("window.__sameDocument === true"), "the progress updated by reloading the page, not in place"
    expect(page.locator("#run-count")).to_have_text("4 / 4 questions")

    chart = page.locator("svg#sweep-chart")
    expect(chart).to_be_visible()
    expect(chart.locator("polyline")).to_have_count(3)
    for series in ("answer_rate", "refusal_rate", "f1"):
        points = chart.locator(f"polyline[data-series={series}]").get_attribute("points")
        assert len(points.split()) == 51, series
    metrics = page.locator("#eval-metrics")
    expect(metrics.get_by_role("row", name="Answer rate (answerable)")).to_contain_text("100%")
    expect(metrics.get_by_role("row", name="Refusal recall (unanswerable)")).to_contain_text("100%")
    expect(page.locator("#eval-results tbody tr")).to_have_count(4)
    expect(page.locator("#recommendation")).to_contain_text("Gate threshold")
    expect(page.get_by_role("button", name="Apply recommendation")).to_have_count(0)  # a member does not tune
    expect(page.locator("#run-body")).not_to_have_attribute("hx-trigger", "every 1s")
    screenshot(page, request)
