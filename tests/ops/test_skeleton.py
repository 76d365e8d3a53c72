"""The walking skeleton end to end on the real services:
upload → Celery worker → chunks with embeddings and tsvector → ask → verified claims → audit record."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import reverse

from apps.audits.models import AuditRecord
from apps.audits.selectors import audit_chain_check
from apps.documents.models import Chunk, Document
from apps.queries.models import QueryRun
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

LIGHTHOUSE = (
    "The Skerryvore lighthouse stands on a reef off the west coast of Scotland. "
    "It was completed in 1844 and is 48 metres tall, the tallest lighthouse in Scotland. "
    "The engineer Alan Stevenson designed the tower with a granite base that curves outward. "
    "Its light can be seen from 18 nautical miles away on a clear night.\n\n"
    "Keepers lived in the tower until the light was automated in 1972."
)
BAKERY = "The Rye Street bakery opens at six in the morning. Its sourdough starter is fed twice a day with whole rye flour."


def upload(client, slug: str, name: str, text: str):
    return client.post(reverse("documents", args=[slug]), {"files": [SimpleUploadedFile(name, text.encode())]})


def ready(slug_workspace, name: str) -> Document | None:
    return Document.objects.filter(workspace=slug_workspace, filename=name, status="ready").first()


def test_upload_is_ingested_by_the_worker_into_embedded_searchable_chunks(personas, celery_worker):
    response = upload(personas.client("member"), "acme", "skerryvore.txt", LIGHTHOUSE)
    assert response.status_code == 302
    document = wait_until(lambda: ready(personas.workspace_a, "skerryvore.txt"), what="the document to be ingested")
    assert document.text == LIGHTHOUSE
    chunks = list(Chunk.objects.filter(document=document).order_by("ordinal"))
    assert document.chunk_count == len(chunks) >= 1
    for chunk in chunks:
        assert LIGHTHOUSE[chunk.start_offset : chunk.end_offset] == chunk.text
        assert len(chunk.embedding) == 384
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM documents_chunk WHERE document_id = %s AND search_vector @@ to_tsquery('english', 'lighthouse')",
            [document.pk],
        )
        assert cursor.fetchone()[0] >= 1


def test_files_uploaded_together_are_ingested_by_the_worker_as_one_batch(personas, celery_worker):
    client = personas.client("member")
    files = [SimpleUploadedFile(name, text.encode()) for name, text in (("a.txt", LIGHTHOUSE), ("b.txt", BAKERY))]
    assert client.post(reverse("documents", args=["acme"]), {"files": files}).status_code == 302
    wait_until(lambda: ready(personas.workspace_a, "a.txt") and ready(personas.workspace_a, "b.txt"), what="the batch to be ingested")
    documents = list(Document.objects.filter(workspace=personas.workspace_a))
    assert len({d.batch for d in documents}) == 1
    assert documents[0].batch is not None
    assert all(d.chunk_count == Chunk.objects.filter(document=d).count() >= 1 for d in documents)


def test_question_is_answered_with_located_quotes_and_recorded_in_the_audit_trail(personas, celery_worker):
    client = personas.client("member")
    upload(client, "acme", "skerryvore.txt", LIGHTHOUSE)
    upload(personas.client("owner_b"), "beta", "skerryvore-b.txt", LIGHTHOUSE.replace("Skerryvore", "Beta Rock"))
    wait_until(
        lambda: ready(personas.workspace_a, "skerryvore.txt") and ready(personas.workspace_b, "skerryvore-b.txt"), what="both ingestions"
    )

    response = client.post(reverse("ask", args=["acme"]), {"question": "How tall is the Skerryvore lighthouse?", "mode": "verified"})
    assert response.status_code == 302
    run = QueryRun.objects.get(workspace=personas.workspace_a)
    assert response["Location"].endswith(f"/answers/{run.pk}/"), "the page shows the run while the worker answers it"
    run = wait_until(lambda: QueryRun.objects.filter(pk=run.pk, status="done").first(), what="the worker to answer")
    assert [s["name"] for s in run.stages] == list(QueryRun.STAGES)
    assert run.risk in {"low", "medium", "high"}
    assert 0 <= run.confidence <= 1
    assert not run.insufficient
    assert any("48 metres" in claim["quote"] for claim in run.claims)
    for claim in run.claims:
        assert claim["quote_status"] == "located"
        assert LIGHTHOUSE[claim["start"] : claim["end"]] == claim["quote"]
        assert claim["verdict"] == "supports"
    assert {s["title"] for s in run.sources} == {"skerryvore"}, "retrieval must never leave the workspace"

    page = client.get(response["Location"]).content.decode()
    assert "48 metres tall" in page
    assert "supports" in page
    assert "skerryvore" in page

    record = AuditRecord.objects.get(workspace=personas.workspace_a, query_run_id=run.pk)
    assert record.payload["question"] == run.question
    assert record.payload["stages"]["verify"]["claims"] == run.claims
    assert record.payload["rerank"]["reranker"] == "local:sentence-embedding+coverage"
    assert all(0 <= s["score"] <= 1 for s in record.payload["rerank"]["scores"])
    assert run.sources[0]["rerank_score"] == max(s["score"] for s in record.payload["rerank"]["scores"])
    assert audit_chain_check(workspace=personas.workspace_a).intact


def test_api_answers_the_same_question_as_json_with_token_auth(personas, celery_worker):
    upload(personas.client("member"), "acme", "skerryvore.txt", LIGHTHOUSE)
    wait_until(lambda: ready(personas.workspace_a, "skerryvore.txt"), what="ingestion")
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    headers = {"HTTP_AUTHORIZATION": f"Token {personas.token('member')}"}

    response = (
        personas.client("member")
        .__class__()
        .post(url, {"question": "When was the Skerryvore lighthouse automated?"}, content_type="application/json", **headers)
    )
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "done"
    assert body["mode"] == "verified"
    assert any("1972" in claim["quote"] for claim in body["claims"])
    assert all(claim["quote_status"] == "located" for claim in body["claims"])
    assert AuditRecord.objects.get(query_run_id=body["id"]).actor_label == "api:mia"

    listing = personas.client("viewer").get(url).json()
    assert listing["count"] == 1
    assert listing["results"][0]["id"] == body["id"]


def test_api_upload_is_ingested_and_the_same_file_again_is_not_duplicated(personas, celery_worker):
    url = reverse("api_documents", args=[personas.workspace_a.pk])
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Token {personas.token('member')}"}
    first = client.post(url, {"files": [SimpleUploadedFile("bakery.txt", BAKERY.encode())]}, **headers)
    assert first.status_code == 201
    again = client.post(url, {"files": [SimpleUploadedFile("bakery-copy.txt", BAKERY.encode())]}, **headers)
    assert again.status_code == 200
    assert again.json()["results"][0]["created"] is False
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 1
    wait_until(lambda: ready(personas.workspace_a, "bakery.txt"), what="ingestion")


def test_a_question_nothing_answers_is_refused_honestly(personas, celery_worker):
    upload(personas.client("member"), "acme", "bakery.txt", BAKERY)
    wait_until(lambda: ready(personas.workspace_a, "bakery.txt"), what="ingestion")
    response = personas.client("member").post(
        reverse("ask", args=["acme"]), {"question": "What is the orbital period of Neptune's moon Triton?", "mode": "verified"}
    )
    run = wait_until(lambda: QueryRun.objects.filter(workspace=personas.workspace_a, status="done").first(), what="the worker to answer")
    assert run.insufficient
    assert run.risk == "refused", "a refusal asserts nothing: it has no risk label"
    assert run.confidence is None
    assert run.refusal["by"] in ("gate", "corrective")
    assert run.claims == []
    assert "sufficient information" in personas.client("member").get(response["Location"]).content.decode()


def test_a_file_whose_content_is_not_what_its_name_says_fails_with_a_message(personas, celery_worker):
    client = personas.client("member")
    client.post(reverse("documents", args=["acme"]), {"files": [SimpleUploadedFile("report.txt", b"%PDF-1.7\n" + b"\x00\x01garbage" * 50)]})
    failed = wait_until(lambda: Document.objects.filter(workspace=personas.workspace_a, status="failed").first(), what="the failure")
    assert "does not match its extension" in failed.error
    assert "does not match its extension" in client.get(reverse("documents", args=["acme"])).content.decode()
