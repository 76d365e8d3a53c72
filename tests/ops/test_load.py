"""A short run of `make load`: concurrent clients asking and concurrent uploads, with zero
server errors and every upload ingested. (`make load` runs 20 clients × 60 s and 50 uploads.)"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from apps.documents.models import Document
from apps.workspaces.models import Workspace

pytestmark = pytest.mark.django_db(transaction=True)


def test_five_clients_for_ten_seconds_and_ten_uploads_hold_without_a_server_error(celery_worker):
    out = StringIO()
    call_command("bench_load", clients=5, seconds=10, uploads=10, timeout=180, stdout=out)
    lines = out.getvalue().strip().splitlines()
    result = json.loads(lines[-1])
    questions, uploads = result["questions"], result["uploads"]
    assert questions["server_errors"] == 0
    assert questions["client_errors"] == 0
    assert questions["answered"] == questions["requests"] >= 5
    # Some of the five are answered from the demo documents, so the load runs the whole pipeline.
    # (Since issue 43's local judge, three of the five are refused: one on relevance, two on
    # answerability, docs/verifier.md "Known limits"; with the feature judge it was one.)
    assert questions["refused"] < questions["answered"], "some questions are answered from the demo documents, not all refused"
    assert 0 < questions["p50_ms"] <= questions["p95_ms"]
    assert uploads == uploads | {"sent": 10, "accepted": 10, "server_errors": 0, "ready": 10, "failed": 0}
    assert result["serving"] == {"workers": 1, "threads": 8, "torch_threads": 1}, "2 cores: the plan `make run` serves with"
    assert lines[0].startswith("questions: 5 clients × 10 s:")
    assert not Workspace.objects.filter(slug__startswith="bench-load-").exists(), "the temporary workspace is removed"
    assert not Document.objects.exists()
