"""Every page and endpoint, walked as an outsider, a viewer and an anonymous user."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.apikeys.models import ApiKey
from apps.apikeys.services import apikey_create
from apps.audits.services import audit_record_create
from apps.documents.models import Document
from apps.evals.models import EvalRun, EvalSet
from apps.queries.models import QueryRun


@pytest.fixture
def objects(personas):
    a = personas.workspace_a
    run = QueryRun.objects.create(workspace=a, question="What is in A?", status="done", answer="Secret of A")
    doc = Document.objects.create(workspace=a, title="a-notes", filename="a-notes.txt", size_bytes=1, sha256="0" * 64, file="x")
    key, _ = apikey_create(workspace=a, actor=None, name="CI", role="member")
    record = audit_record_create(workspace=a, actor=None, actor_label="mia", query_run_id=run.pk, payload={"question": run.question})
    eval_set = EvalSet.objects.create(workspace=a, name="acme-eval", source_format="jsonl", question_count=1, answerable_count=1)
    eval_run = EvalRun.objects.create(workspace=a, eval_set=eval_set, status="done", gate_threshold=0.5, crag_lower=0.35)
    return {"run": run, "doc": doc, "membership": personas.member, "key": key, "record": record, "eval_set": eval_set, "eval_run": eval_run}


def page_urls(p, o) -> list[tuple[str, str]]:
    slug = p.workspace_a.slug
    return [
        ("get", reverse("workspace_home", args=[slug])),
        ("get", reverse("ask", args=[slug])),
        ("post", reverse("ask", args=[slug])),
        ("get", reverse("answer", args=[slug, o["run"].pk])),
        ("get", reverse("documents", args=[slug])),
        ("post", reverse("documents", args=[slug])),
        ("post", reverse("documents_reindex_all", args=[slug])),
        ("post", reverse("document_reindex", args=[slug, o["doc"].pk])),
        ("post", reverse("document_delete", args=[slug, o["doc"].pk])),
        ("get", reverse("members", args=[slug])),
        ("post", reverse("members", args=[slug])),
        ("post", reverse("member_role", args=[slug, o["membership"].pk])),
        ("post", reverse("member_remove", args=[slug, o["membership"].pk])),
        ("get", reverse("providers", args=[slug])),
        ("post", reverse("providers", args=[slug])),
        ("get", reverse("api_keys_page", args=[slug])),
        ("post", reverse("api_keys_page", args=[slug])),
        ("post", reverse("api_key_revoke", args=[slug, o["key"].pk])),
        ("get", reverse("workspace_settings", args=[slug])),
        ("post", reverse("workspace_settings", args=[slug])),
        ("get", reverse("audit_list", args=[slug])),
        ("get", reverse("audit_detail", args=[slug, o["record"].pk])),
        ("get", reverse("audit_export", args=[slug, "csv"])),
        ("get", reverse("audit_export", args=[slug, "json"])),
        ("get", reverse("audit_events", args=[slug])),
        ("get", reverse("evaluations", args=[slug])),
        ("post", reverse("evaluations", args=[slug])),
        ("get", reverse("eval_set", args=[slug, o["eval_set"].pk])),
        ("post", reverse("eval_run_start", args=[slug, o["eval_set"].pk])),
        ("get", reverse("eval_run", args=[slug, o["eval_run"].pk])),
        ("post", reverse("eval_run_apply", args=[slug, o["eval_run"].pk])),
        ("post", reverse("eval_set_delete", args=[slug, o["eval_set"].pk])),
    ]


ADMIN_ONLY_PAGES = ("api_keys_page",)


def api_urls(p, o) -> list[tuple[str, str]]:
    """A sample of the API; test_api_access walks all of it with every kind of credential."""
    ws = p.workspace_a.pk
    return [
        ("get", reverse("api_queries", args=[ws])),
        ("post", reverse("api_queries", args=[ws])),
        ("get", reverse("api_query", args=[ws, o["run"].pk])),
        ("get", reverse("api_documents", args=[ws])),
        ("post", reverse("api_documents", args=[ws])),
        ("get", reverse("api_document", args=[ws, o["doc"].pk])),
        ("delete", reverse("api_document", args=[ws, o["doc"].pk])),
        ("post", reverse("api_document_reindex", args=[ws, o["doc"].pk])),
        ("post", reverse("api_documents_reindex", args=[ws])),
        ("get", reverse("api_eval_sets", args=[ws])),
        ("post", reverse("api_eval_sets", args=[ws])),
        ("get", reverse("api_eval_set", args=[ws, o["eval_set"].pk])),
        ("get", reverse("api_eval_runs", args=[ws, o["eval_set"].pk])),
        ("post", reverse("api_eval_runs", args=[ws, o["eval_set"].pk])),
        ("get", reverse("api_eval_run", args=[ws, o["eval_run"].pk])),
        ("post", reverse("api_eval_run_apply", args=[ws, o["eval_run"].pk])),
        ("delete", reverse("api_eval_set", args=[ws, o["eval_set"].pk])),
    ]


def test_outsider_gets_404_on_every_page_of_another_workspace(personas, objects):
    client = personas.client("owner_b")
    for method, url in page_urls(personas, objects):
        response = getattr(client, method)(url)
        assert response.status_code == 404, (method, url, response.status_code)


def test_outsider_gets_404_on_every_api_endpoint_of_another_workspace(personas, objects):
    client = personas.client("owner_b")
    headers = {"HTTP_AUTHORIZATION": f"Token {personas.token('owner_b')}"}
    for method, url in api_urls(personas, objects):
        response = getattr(client, method)(url, **headers)
        assert response.status_code == 404, (method, url, response.status_code)
        assert response.json()["error"]["code"] == "not_found"


def test_anonymous_user_is_sent_to_login_from_every_page(personas, objects, client):
    for method, url in page_urls(personas, objects):
        response = getattr(client, method)(url)
        assert response.status_code == 302, (method, url)
        assert response["Location"].startswith(reverse("login")), (method, url)


def test_anonymous_api_call_gets_401(personas, objects, client):
    for method, url in api_urls(personas, objects):
        response = getattr(client, method)(url)
        assert response.status_code == 401, (method, url)
        assert response.json()["error"]["code"] == "not_authenticated"


def test_viewer_can_read_but_every_write_is_403(personas, objects):
    client = personas.client("viewer")
    headers = {"HTTP_AUTHORIZATION": f"Token {personas.token('viewer')}"}
    admin_only = [reverse(name, args=[personas.workspace_a.slug]) for name in ADMIN_ONLY_PAGES]
    for method, url in page_urls(personas, objects):
        response = getattr(client, method)(url)
        expected = (200, 302) if method == "get" and url not in admin_only else (403,)
        assert response.status_code in expected, (method, url, response.status_code)
    for method, url in api_urls(personas, objects):
        response = getattr(client, method)(url, **headers)
        assert response.status_code == (200 if method == "get" else 403), (method, url, response.status_code)
    assert Document.objects.filter(pk=objects["doc"].pk, status="queued").exists(), "nothing a viewer tried changed the document"
    assert ApiKey.objects.get(pk=objects["key"].pk).active, "nor the key"
    assert EvalSet.objects.filter(pk=objects["eval_set"].pk).exists(), "nor the evaluation set"
    assert EvalRun.objects.count() == 1, "and no evaluation run was started"


def test_object_of_one_workspace_is_404_through_the_url_of_another(personas, objects):
    """owner_b is a real member of beta, but the run belongs to acme."""
    client = personas.client("owner_b")
    assert client.get(reverse("answer", args=["beta", objects["run"].pk])).status_code == 404
    assert client.get(reverse("audit_detail", args=["beta", objects["record"].pk])).status_code == 404
    headers = {"HTTP_AUTHORIZATION": f"Token {personas.token('owner_b')}"}
    assert client.get(reverse("api_query", args=[personas.workspace_b.pk, objects["run"].pk]), **headers).status_code == 404
    assert client.get(reverse("api_document", args=[personas.workspace_b.pk, objects["doc"].pk]), **headers).status_code == 404
    assert client.get(reverse("eval_set", args=["beta", objects["eval_set"].pk])).status_code == 404
    assert client.get(reverse("eval_run", args=["beta", objects["eval_run"].pk])).status_code == 404
    assert client.get(reverse("api_eval_run", args=[personas.workspace_b.pk, objects["eval_run"].pk]), **headers).status_code == 404


def test_lists_show_only_the_callers_workspace(personas, objects):
    client = personas.client("owner_b")
    headers = {"HTTP_AUTHORIZATION": f"Token {personas.token('owner_b')}"}
    body = client.get(reverse("api_queries", args=[personas.workspace_b.pk]), **headers).json()
    assert body["count"] == 0
    page = client.get(reverse("workspace_list")).content.decode()
    assert "Beta Labs" in page
    assert "Acme Research" not in page
    assert client.get(reverse("api_eval_sets", args=[personas.workspace_b.pk]), **headers).json()["count"] == 0
    assert "acme-eval" not in client.get(reverse("evaluations", args=["beta"])).content.decode()
    history = client.get(reverse("audit_list", args=["beta"])).content.decode()
    assert "<strong>0</strong> records" in history
    exported = b"".join(client.get(reverse("audit_export", args=["beta", "csv"])).streaming_content).decode()
    assert "What is in A?" not in exported
    assert exported.count("\n") == 1, "the header alone"


def test_unknown_workspace_slug_and_malformed_ids_are_404(personas):
    client = personas.client("owner")
    assert client.get("/w/no-such-place/ask/").status_code == 404
    assert client.get("/w/acme/answers/not-a-uuid/").status_code == 404
