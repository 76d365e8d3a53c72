"""Idempotency-Key on uploads and questions: a repeat gets the first response, and the work
is done once — even when the repeats arrive together."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from apps.documents.models import Document
from apps.queries import api as queries_api
from apps.queries.models import QueryRun
from apps.workspaces.models import IdempotencyRecord


def token_client(personas, who: str = "member", key: str | None = None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {personas.token(who)}", **({"HTTP_IDEMPOTENCY_KEY": key} if key else {}))
    return client


def upload(client, url, content: bytes = b"Lighthouses are automated.", name: str = "notes.txt"):
    return client.post(url, {"files": [SimpleUploadedFile(name, content)]}, format="multipart")


def test_a_repeated_upload_gets_the_first_response_and_adds_one_document(personas):
    url = reverse("api_documents", args=[personas.workspace_a.pk])
    client = token_client(personas, key="upload-1")
    first = upload(client, url)
    again = upload(client, url)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 1
    without_key = upload(token_client(personas), url)
    assert without_key.status_code == 200, "without the key the same file is recognised, not replayed"


def test_a_repeated_question_is_answered_once(personas):
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    client = token_client(personas, key="ask-1")
    first = client.post(url, {"question": "When does the bakery open?"}, format="json")
    again = client.post(url, {"question": "When does the bakery open?"}, format="json")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert QueryRun.objects.filter(workspace=personas.workspace_a).count() == 1


def test_an_asynchronous_question_replays_its_202_and_location(personas):
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    client = token_client(personas, key="ask-async")
    first = client.post(url, {"question": "Open?", "async": True}, format="json")
    again = client.post(url, {"question": "Open?", "async": True}, format="json")
    assert first.status_code == again.status_code == 202
    assert again["Location"] == first["Location"] == first.json()["url"]
    assert QueryRun.objects.count() == 1


def test_the_same_key_with_another_body_is_refused(personas):
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    client = token_client(personas, key="ask-2")
    assert client.post(url, {"question": "First question?", "async": True}, format="json").status_code == 202
    other = client.post(url, {"question": "Another question?", "async": True}, format="json")
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert "different request" in other.json()["error"]["message"]
    other_file = upload(client, reverse("api_documents", args=[personas.workspace_a.pk]))
    assert other_file.status_code == 422, "nor on another endpoint"
    assert QueryRun.objects.count() == 1
    assert not Document.objects.exists()


def test_keys_belong_to_their_credential(personas):
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    mine = token_client(personas, "member", key="shared-name").post(url, {"question": "Mine?", "async": True}, format="json")
    theirs = token_client(personas, "admin", key="shared-name").post(url, {"question": "Theirs?", "async": True}, format="json")
    assert (mine.status_code, theirs.status_code) == (202, 202)
    assert mine.json()["id"] != theirs.json()["id"]


def test_a_failed_request_leaves_the_key_free_and_after_a_day_it_is_forgotten(personas):
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    client = token_client(personas, key="retry-me")
    assert client.post(url, {"question": ""}, format="json").status_code == 400
    assert client.post(url, {"question": "Fixed?", "async": True}, format="json").status_code == 202
    IdempotencyRecord.objects.update(created_at=IdempotencyRecord.objects.get().created_at - timedelta(hours=25))
    later = client.post(url, {"question": "Fixed?", "async": True}, format="json")
    assert later.status_code == 202
    assert "Idempotent-Replayed" not in later
    assert QueryRun.objects.count() == 2


def test_a_malformed_key_is_a_400(personas):
    client = token_client(personas, key="x" * 300)
    response = client.post(reverse("api_queries", args=[personas.workspace_a.pk]), {"question": "Hi?"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_idempotency_key"


@pytest.mark.django_db(transaction=True)
def test_concurrent_repeats_do_the_work_once(personas, monkeypatch):
    """Four copies sent at once: one answers; the others are told it is still running (409), or,
    if the machine was slow to start them, get its finished response."""
    calls = []
    real_answer = queries_api.query_answer

    def slow_answer(**kwargs):
        calls.append(kwargs["question"])
        time.sleep(0.5)
        return real_answer(**kwargs)

    monkeypatch.setattr(queries_api, "query_answer", slow_answer)
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    token = personas.token("member")
    start, statuses = threading.Barrier(4), []

    def send():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}", HTTP_IDEMPOTENCY_KEY="together")
        start.wait()
        statuses.append(client.post(url, {"question": "Who answers?"}, format="json").status_code)
        connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(calls) == 1
    assert len(statuses) == 4
    assert set(statuses) <= {201, 409}
    replay = token_client(personas, key="together").post(url, {"question": "Who answers?"}, format="json")
    assert replay.status_code == 201
    assert replay["Idempotent-Replayed"] == "true"
    assert QueryRun.objects.count() == 1
