"""The worker keeps its database connections from one task to the next, as the web server keeps
them from one request to the next (CONN_MAX_AGE), rather than open a Postgres backend a task; a
connection the server dropped is noticed before a task uses it, and the task gets a new one. The
real worker, the real database."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from apps.documents import services
from apps.documents.models import Document, DocumentStatus
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _sessions() -> int:
    """Sessions ever opened on this database (Postgres counts each connection once)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def _ingest(workspace, name: str) -> None:
    text = f"{name} records that the harbour lamp was lit at dusk and put out at dawn by its keeper."
    document, _ = services.document_create(workspace=workspace, actor=None, filename=name, data=text.encode())
    wait_until(
        lambda: Document.objects.get(pk=document.pk).status in (DocumentStatus.READY, DocumentStatus.FAILED),
        timeout=120,
        what=f"{name} to be ingested",
    )
    assert Document.objects.get(pk=document.pk).status == DocumentStatus.READY


def _settled_sessions() -> int:
    time.sleep(1.5)  # a backend reports its session to the statistics within a second
    return _sessions()


def test_the_worker_keeps_its_connections_from_one_task_to_the_next(personas, celery_worker):
    workspace = personas.workspace_a
    for n in range(2):  # each of the worker's two threads may open its connection here
        _ingest(workspace, f"warm-{n}.txt")
    before = _settled_sessions()
    for n in range(6):
        _ingest(workspace, f"note-{n}.txt")
    # At most the one thread that had no task yet opens a connection; one a task would be six.
    assert _settled_sessions() - before <= 1


def test_a_connection_the_server_dropped_is_replaced_before_the_next_task_uses_it(personas, celery_worker):
    workspace = personas.workspace_a
    _ingest(workspace, "before.txt")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        assert cursor.fetchone()[0] >= 1  # the worker's kept connection was there to drop
    for n in range(3):
        _ingest(workspace, f"after-{n}.txt")
