"""A worker killed with SIGKILL mid-ingestion: every document still ends ready, with exactly its chunks."""

from __future__ import annotations

import os
import signal
import subprocess
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from apps.core.worker import celery_worker_command
from apps.documents import services
from apps.documents.models import Chunk, Document, DocumentStatus
from apps.documents.tasks import ingest_document
from apps.pipeline.text import chunk_text
from apps.workspaces.selectors import settings_get
from tests.conftest import ROOT, wait_until, worker_env

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "doomed"


def long_text(i: int) -> str:
    return " ".join(f"Report {i}, finding {n}: the sample from site {n % 13} held {n * 7 % 101} units of nitrogen." for n in range(700))


@pytest.fixture
def doomed_worker():
    """A worker of the test's own, on a queue only it consumes, to be killed."""
    cmd = celery_worker_command(pool="solo", concurrency=1, extra=("-Q", QUEUE, "-n", f"doomed-{os.getpid()}@%h"))
    log = open(settings.VAR_DIR / "doomed-worker.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(cmd, cwd=ROOT, env=worker_env(), stdout=log, stderr=subprocess.STDOUT)
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()
    log.close()


def test_sigkilled_worker_leaves_every_document_to_be_finished_with_exact_chunks(personas, celery_worker, doomed_worker):
    workspace = personas.workspace_a
    documents = [
        services.document_create(workspace=workspace, actor=None, filename=f"report-{i}.txt", data=long_text(i).encode(), enqueue=False)[0]
        for i in range(10)
    ]
    for document in documents:
        ingest_document.apply_async((str(workspace.pk), str(document.pk)), queue=QUEUE)

    wait_until(
        lambda: Document.objects.filter(workspace=workspace, status=DocumentStatus.PROCESSING, progress_total__gt=0).exists(),
        timeout=120,
        what="the doomed worker to be mid-ingestion",
    )
    doomed_worker.send_signal(signal.SIGKILL)
    doomed_worker.wait()
    assert Document.objects.filter(workspace=workspace, status=DocumentStatus.PROCESSING).count() == 1
    assert Document.objects.filter(workspace=workspace).exclude(status=DocumentStatus.READY).count() >= 2

    # What the scheduler's reaper does once the dead worker's lease has run out.
    later = timezone.now() + timedelta(seconds=max(settings.INGEST_LEASE_S, settings.INGEST_REQUEUE_QUEUED_AFTER_S) + 1)
    assert services.documents_reap_stuck(now=later)["requeued"] >= 2

    wait_until(
        lambda: not Document.objects.filter(workspace=workspace).exclude(status=DocumentStatus.READY).exists(),
        # Ten long documents, each embedded chunk by chunk and sentence by sentence (the unit
        # vectors), on a machine that may be running other work: minutes, not seconds.
        timeout=600,
        what="all ten documents to be ready",
    )
    options = settings_get(workspace=workspace)
    for document in Document.objects.filter(workspace=workspace):
        expected = chunk_text(long_text(int(document.title.split("-")[1])), size=options.chunk_size, overlap=options.chunk_overlap)
        chunks = list(Chunk.objects.filter(document=document).order_by("ordinal").values_list("ordinal", "text"))
        assert document.chunk_count == len(expected)
        assert chunks == [(d.ordinal, d.text) for d in expected], document.filename
