"""Every page and endpoint, walked as an outsider, a viewer and an anonymous user."""

from __future__ import annotations

import pytest
from django.urls import URLResolver, get_resolver, resolve, reverse

from apps.apikeys.models import ApiKey
from apps.apikeys.services import apikey_create
from apps.documents.models import Document
from apps.evals.models import EvalRun, EvalSet
from apps.queries.models import QueryRun
from apps.sources.models import Source
from apps.workspaces.models import Invitation, InvitationStatus, Membership
from tests.factories import AuditRecordFactory, DocumentFactory, EvalRunFactory, EvalSetFactory, InvitationFactory, QueryRunFactory


@pytest.fixture
def objects(personas):
    a = personas.workspace_a
    run = QueryRunFactory(workspace=a, question="What is in A?", answer="Secret of A")
    doc = DocumentFactory(workspace=a, title="a-notes", batch="5b0c1c43-5f0e-4c36-9a8a-1f1d6f0c2b77")
    key, _ = apikey_create(workspace=a, actor=None, name="CI", role="member")
    record = AuditRecordFactory(workspace=a, query_run_id=run.pk, payload={"question": run.question})
    eval_set = EvalSetFactory(workspace=a, name="acme-eval", question_count=1, answerable_count=1)
    eval_run = EvalRunFactory(eval_set=eval_set)
    invitation = InvitationFactory(workspace=a, identifier="nina@example.com")
    source = Source.objects.create(workspace=a, kind="url", url="https://example.org/a-notes", status="done")
    return {
        "source": source,
        "run": run,
        "doc": doc,
        "membership": personas.member,
        "key": key,
        "record": record,
        "eval_set": eval_set,
        "eval_run": eval_run,
        "invitation": invitation,
    }


def page_urls(p, o) -> list[tuple[str, str]]:
    slug = p.workspace_a.slug
    return [
        ("get", reverse("workspace_home", args=[slug])),
        ("get", reverse("ask", args=[slug])),
        ("post", reverse("ask", args=[slug])),
        ("get", reverse("answer", args=[slug, o["run"].pk])),
        ("post", reverse("answer_reverify", args=[slug, o["run"].pk])),
        ("get", reverse("documents", args=[slug])),
        ("post", reverse("documents", args=[slug])),
        ("post", reverse("documents_reindex_all", args=[slug])),
        ("post", reverse("document_reindex", args=[slug, o["doc"].pk])),
        ("post", reverse("document_delete", args=[slug, o["doc"].pk])),
        ("get", reverse("sources", args=[slug])),
        ("post", reverse("sources", args=[slug])),
        ("post", reverse("source_check", args=[slug, o["source"].pk])),
        ("post", reverse("source_schedule", args=[slug, o["source"].pk])),
        ("post", reverse("source_delete", args=[slug, o["source"].pk])),
        ("get", reverse("members", args=[slug])),
        ("post", reverse("members", args=[slug])),
        ("post", reverse("member_role", args=[slug, o["membership"].pk])),
        ("post", reverse("member_remove", args=[slug, o["membership"].pk])),
        ("post", reverse("invitation_revoke", args=[slug, o["invitation"].pk])),
        ("post", reverse("workspace_leave", args=[slug])),
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


ADMIN_ONLY_PAGES = ("api_keys_page", "members", "providers")
ADMIN_ONLY_API = ("api_members", "api_member", "api_invitations", "api_invitation", "api_keys", "api_key")
# Every member may leave, a viewer too: the viewer's walk leaves last, apart from the writes it may not do.
LEAVE = ("workspace_leave", "api_workspace_leave")


def api_urls(p, o) -> list[tuple[str, str]]:
    """Every workspace endpoint (test_api_access walks them again with every kind of credential)."""
    ws = p.workspace_a.pk
    return [
        ("get", reverse("api_workspace", args=[ws])),
        ("get", reverse("api_members", args=[ws])),
        ("post", reverse("api_members", args=[ws])),
        ("get", reverse("api_member", args=[ws, o["membership"].pk])),
        ("patch", reverse("api_member", args=[ws, o["membership"].pk])),
        ("delete", reverse("api_member", args=[ws, o["membership"].pk])),
        ("get", reverse("api_invitations", args=[ws])),
        ("get", reverse("api_invitation", args=[ws, o["invitation"].pk])),
        ("delete", reverse("api_invitation", args=[ws, o["invitation"].pk])),
        ("post", reverse("api_workspace_leave", args=[ws])),
        ("get", reverse("api_settings", args=[ws])),
        ("patch", reverse("api_settings", args=[ws])),
        ("get", reverse("api_audits", args=[ws])),
        ("get", reverse("api_audit", args=[ws, o["record"].pk])),
        ("get", reverse("api_audits_export", args=[ws, "csv"])),
        ("get", reverse("api_keys", args=[ws])),
        ("post", reverse("api_keys", args=[ws])),
        ("get", reverse("api_key", args=[ws, o["key"].pk])),
        ("delete", reverse("api_key", args=[ws, o["key"].pk])),
        ("get", reverse("api_queries", args=[ws])),
        ("post", reverse("api_queries", args=[ws])),
        ("get", reverse("api_query", args=[ws, o["run"].pk])),
        ("post", reverse("api_query_reverify", args=[ws, o["run"].pk])),
        ("get", reverse("api_documents", args=[ws])),
        ("post", reverse("api_documents", args=[ws])),
        ("get", reverse("api_document", args=[ws, o["doc"].pk])),
        ("delete", reverse("api_document", args=[ws, o["doc"].pk])),
        ("post", reverse("api_document_reindex", args=[ws, o["doc"].pk])),
        ("post", reverse("api_documents_reindex", args=[ws])),
        ("get", reverse("api_upload_batch", args=[ws, o["doc"].batch])),
        ("get", reverse("api_sources", args=[ws])),
        ("post", reverse("api_sources", args=[ws])),
        ("get", reverse("api_source", args=[ws, o["source"].pk])),
        ("post", reverse("api_source_check", args=[ws, o["source"].pk])),
        ("post", reverse("api_source_schedule", args=[ws, o["source"].pk])),
        ("delete", reverse("api_source", args=[ws, o["source"].pk])),
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
        if resolve(url).url_name in LEAVE:
            continue
        response = getattr(client, method)(url)
        expected = (200, 302) if method == "get" and url not in admin_only else (403,)
        assert response.status_code in expected, (method, url, response.status_code)
    for method, url in api_urls(personas, objects):
        if resolve(url).url_name in LEAVE:
            continue
        response = getattr(client, method)(url, **headers)
        readable = method == "get" and resolve(url).url_name not in ADMIN_ONLY_API
        assert response.status_code == (200 if readable else 403), (method, url, response.status_code)
    assert Document.objects.filter(pk=objects["doc"].pk, status="queued").exists(), "nothing a viewer tried changed the document"
    assert ApiKey.objects.get(pk=objects["key"].pk).active, "nor the key"
    assert EvalSet.objects.filter(pk=objects["eval_set"].pk).exists(), "nor the evaluation set"
    assert EvalRun.objects.count() == 1, "and no evaluation run was started"
    assert Source.objects.filter(pk=objects["source"].pk, status="done").exists(), "nor the source"
    assert not QueryRun.objects.filter(reverifies=objects["run"]).exists(), "and no answer was re-verified"
    assert Invitation.objects.get(pk=objects["invitation"].pk).status == InvitationStatus.PENDING, "nor the invitation"
    assert client.post(reverse("workspace_leave", args=[personas.workspace_a.slug])).status_code == 302
    assert not Membership.objects.filter(pk=personas.viewer.pk).exists(), "but the viewer may leave"


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


def workspace_routes() -> dict[str, set[str]]:
    """Every named route of the URLconf that takes a workspace, by kind: pages carry its slug,
    the API its id."""
    found: dict[str, set[str]] = {"page": set(), "api": set()}

    def walk(patterns, prefix: str = "") -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif "<slug:slug>" in (route := prefix + str(pattern.pattern)):
                found["page"].add(pattern.name)
            elif "<uuid:workspace_id>" in route:
                found["api"].add(pattern.name)

    walk(get_resolver().url_patterns)
    return found


def test_every_workspace_route_of_the_urlconf_is_in_the_walks(personas, objects):
    """A new page or endpoint that the walks above miss fails here, not in production."""
    routes = workspace_routes()
    walked_pages = {resolve(url).url_name for _, url in page_urls(personas, objects)}
    walked_api = {resolve(url).url_name for _, url in api_urls(personas, objects)}
    assert len(routes["page"]) > 20, routes
    assert len(routes["api"]) > 15, routes
    assert routes["page"] - walked_pages == set(), "pages missing from the outsider / viewer / anonymous walk"
    assert routes["api"] - walked_api == set(), "endpoints missing from the outsider / viewer / anonymous walk"


@pytest.mark.parametrize("who", ["viewer", "member", "admin", "owner"])
def test_who_may_see_the_members_is_one_rule_on_the_page_and_in_the_api(personas, who):
    """The members page and the API's members list show e-mail addresses: both to admins and
    owners only."""
    client = personas.client(who)
    page = client.get(reverse("members", args=[personas.workspace_a.slug]))
    api = client.get(reverse("api_members", args=[personas.workspace_a.pk]))
    allowed = who in ("admin", "owner")
    assert (page.status_code, api.status_code) == ((200, 200) if allowed else (403, 403))
    assert (personas.viewer.user.email in page.content.decode()) == allowed
    assert (personas.viewer.user.email in api.content.decode()) == allowed
