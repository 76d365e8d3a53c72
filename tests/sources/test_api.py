"""The sources API and page: viewers read, members import, re-check and delete, admins schedule;
another workspace's sources are 404; every action leaves an audit event."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.audits.models import AuditEvent
from apps.documents.models import Document
from apps.sources import importing
from apps.sources.models import Source, SourceStatus
from tests.sources.fakes import QUERY

PUBMED = {"kind": "pubmed", "query": QUERY, "max_count": 3}


def api(personas, who: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {personas.token(who)}")
    return client


def sources_url(personas, *rest, workspace=None) -> str:
    ws = (workspace or personas.workspace_a).pk
    return reverse("api_sources", args=[ws]) if not rest else reverse(rest[0], args=[ws, *rest[1:]])


def actions() -> list[str]:
    return list(AuditEvent.objects.filter(action__startswith="source.").order_by("created_at").values_list("action", flat=True))


def test_a_member_imports_a_query_and_a_page_and_everyone_in_the_workspace_reads_them(personas, eutils, web):
    member = api(personas, "member")
    created = member.post(sources_url(personas), PUBMED, format="json")
    assert created.status_code == 202, created.content
    body = created.json()
    assert {k: body[k] for k in ("kind", "query", "max_count", "schedule", "status")} == {
        "kind": "pubmed",
        "query": QUERY,
        "max_count": 3,
        "schedule": "off",
        "status": "queued",
    }
    page = member.post(sources_url(personas), {"kind": "url", "url": f"{web.url}/guide"}, format="json")
    assert page.status_code == 202
    for source in Source.objects.all():
        importing.source_run(workspace=personas.workspace_a, source_id=source.pk)
    listing = api(personas, "viewer").get(sources_url(personas)).json()
    assert listing["count"] == 2
    assert {r["item_count"] for r in listing["results"]} == {3, 1}
    detail = api(personas, "viewer").get(sources_url(personas, "api_source", body["id"])).json()
    assert detail["status"] == "done"
    assert detail["message"] == "3 articles: 3 added."
    assert [i["citation"] for i in detail["items"]] == ["PMID 27633186", "PMID 31452104", "PMID 29220478"]
    assert detail["items"][0]["link"] == "https://pubmed.ncbi.nlm.nih.gov/27633186/"
    assert detail["items"][0]["metadata"]["journal"] == "BMC public health"
    again = member.post(sources_url(personas), PUBMED, format="json")
    assert (again.status_code, again.json()["id"]) == (200, body["id"]), "the same query is the same source, checked again"
    assert actions() == ["source.create", "source.create", "source.check"]


def test_an_api_key_with_the_member_role_imports_too(personas, eutils):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key('member')}")
    assert client.post(sources_url(personas), PUBMED, format="json").status_code == 202
    event = AuditEvent.objects.get(action="source.create")
    assert event.data["query"] == QUERY


def test_viewers_cannot_import_recheck_schedule_or_delete(personas):
    source = Source.objects.create(workspace=personas.workspace_a, kind="url", url="https://example.org/", status="done")
    viewer = api(personas, "viewer")
    assert viewer.post(sources_url(personas), PUBMED, format="json").status_code == 403
    assert viewer.post(sources_url(personas, "api_source_check", source.pk)).status_code == 403
    assert viewer.post(sources_url(personas, "api_source_schedule", source.pk), {"schedule": "daily"}, format="json").status_code == 403
    assert viewer.delete(sources_url(personas, "api_source", source.pk)).status_code == 403
    assert viewer.get(sources_url(personas, "api_source", source.pk)).status_code == 200
    assert Source.objects.get(pk=source.pk).schedule == "off"
    assert actions() == []


def test_only_admins_schedule_at_creation_or_later(personas):
    member, admin = api(personas, "member"), api(personas, "admin")
    refused = member.post(sources_url(personas), PUBMED | {"schedule": "daily"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    assert not Source.objects.exists()
    created = admin.post(sources_url(personas), PUBMED | {"schedule": "weekly"}, format="json").json()
    assert created["schedule"] == "weekly"
    schedule_url = sources_url(personas, "api_source_schedule", created["id"])
    assert member.post(schedule_url, {"schedule": "off"}, format="json").status_code == 403
    changed = admin.post(schedule_url, {"schedule": "daily"}, format="json")
    assert (changed.status_code, changed.json()["schedule"]) == (200, "daily")
    event = AuditEvent.objects.get(action="source.schedule")
    assert (event.data["from"], event.data["to"], event.actor.username) == ("weekly", "daily", "adam")


def test_a_member_rechecks_and_deletes_and_a_running_check_is_not_queued_twice(personas, eutils):
    member = api(personas, "member")
    source_id = member.post(sources_url(personas), PUBMED, format="json").json()["id"]
    importing.source_run(workspace=personas.workspace_a, source_id=source_id)
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 3
    check_url = sources_url(personas, "api_source_check", source_id)
    queued = member.post(check_url)
    assert (queued.status_code, queued.json()["status"]) == (202, "queued")
    Source.objects.filter(pk=source_id).update(status=SourceStatus.RUNNING, heartbeat_at="2100-01-01T00:00:00Z")
    busy = member.post(check_url)
    assert (busy.status_code, busy.json()["error"]["code"]) == (409, "conflict")
    Source.objects.filter(pk=source_id).update(status=SourceStatus.DONE)
    assert member.delete(sources_url(personas, "api_source", source_id)).status_code == 204
    assert not Source.objects.exists()
    assert not Document.objects.filter(workspace=personas.workspace_a).exists(), "its documents went with it"
    assert actions() == ["source.create", "source.check", "source.delete"]
    assert AuditEvent.objects.get(action="source.delete").data["documents"] == 3


def test_another_workspaces_sources_are_not_found(personas):
    source = Source.objects.create(workspace=personas.workspace_a, kind="url", url="https://example.org/", status="done")
    outsider = api(personas, "owner_b")
    assert outsider.get(sources_url(personas, "api_source", source.pk)).status_code == 404
    assert outsider.get(sources_url(personas, "api_source", source.pk, workspace=personas.workspace_b)).status_code == 404
    assert outsider.post(sources_url(personas, "api_source_check", source.pk, workspace=personas.workspace_b)).status_code == 404
    assert outsider.delete(sources_url(personas, "api_source", source.pk, workspace=personas.workspace_b)).status_code == 404
    assert outsider.get(sources_url(personas, workspace=personas.workspace_b)).json()["count"] == 0
    assert Source.objects.filter(pk=source.pk).exists()
    assert APIClient().get(sources_url(personas)).status_code == 401


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"kind": "pubmed"}, "query", "Enter a PubMed query."),
        ({"kind": "pubmed", "query": QUERY, "max_count": "5"}, "max_count", "must be a whole number"),
        ({"kind": "pubmed", "query": QUERY, "max_count": 501}, "max_count", "between 1 and 500"),
        ({"kind": "url"}, "urls", "Enter one or more web addresses"),
        ({"kind": "url", "url": "ftp://example.org/"}, "urls", "is not an http:// or https:// address"),
        ({"kind": "rss", "url": "https://example.org/"}, "kind", "not a valid choice"),
        ({"kind": "pubmed", "query": QUERY, "schedule": "hourly"}, "schedule", "not a valid choice"),
    ],
)
def test_what_cannot_be_imported_is_a_400_that_says_why(personas, body, field, says):
    response = api(personas, "member").post(sources_url(personas), body, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert says in str(error["details"] or "") + error["message"]
    assert not Source.objects.exists()


def test_the_page_imports_shows_progress_and_acts_by_role(personas, eutils, web):
    url = reverse("sources", args=["acme"])
    member = personas.client("member")
    assert 'href="/w/acme/sources/"' in member.get(url).content.decode(), "the nav leads here"
    response = member.post(url, {"kind": "pubmed", "pubmed-query": QUERY, "pubmed-max_count": "2"})
    assert response.status_code == 302
    refused = member.post(url, {"kind": "url", "url-urls": "http://user:pw@example.org/"})
    assert refused.status_code == 400
    assert "carries a user name or password" in refused.content.decode()
    source = Source.objects.get()
    fragment = member.get(url, headers={"HX-Request": "true"}).content.decode().strip()
    assert fragment.startswith('<div id="source-table" hx-get="/w/acme/sources/"'), "polled while the check is queued"
    importing.source_run(workspace=personas.workspace_a, source_id=source.pk)
    page = member.get(url).content.decode()
    assert "2 articles: 2 added." in page
    assert "hx-trigger" not in page, "settled: no more polling"
    assert "Re-check" in page
    assert 'name="schedule"' not in page, "a member does not schedule"
    assert 'name="schedule"' in personas.client("admin").get(url).content.decode()
    viewer_page = personas.client("viewer").get(url).content.decode()
    assert "Import articles" not in viewer_page
    assert "Re-check" not in viewer_page
    assert member.post(reverse("source_schedule", args=["acme", source.pk]), {"schedule": "daily"}).status_code == 403
    assert member.post(reverse("source_check", args=["acme", source.pk])).status_code == 302
    assert Source.objects.get().status == SourceStatus.QUEUED
