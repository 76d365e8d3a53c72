"""Web pages by URL: a member's import becomes a document read by the HTML parser; what the fetcher
refuses ends the source failed with its message and no document. The check runs in this process
here (importing.source_run, as the task runs it); tests/sources/test_sync.py runs it in the worker."""

from __future__ import annotations

import pytest

from apps.audits.models import AuditEvent
from apps.core.errors import ApplicationError
from apps.documents.models import Document
from apps.sources import importing
from apps.sources.models import Source, SourceItem, SourceStatus
from apps.sources.services import source_check, source_urls_create


def imported(personas, *urls: str) -> list[Source]:
    created = source_urls_create(workspace=personas.workspace_a, actor=personas.member, urls=list(urls))
    return [importing.source_run(workspace=personas.workspace_a, source_id=s.pk) for s, _ in created]


def test_a_member_imports_a_page_which_becomes_an_html_document_cited_by_its_url(personas, web):
    url = f"{web.url}/guide"
    (source,) = imported(personas, url)
    assert (source.status, source.message) == (SourceStatus.DONE, "1 page: 1 added.")
    item = SourceItem.objects.get(source=source)
    document = Document.objects.get(pk=item.document_id, workspace=personas.workspace_a)
    assert document.title == "A keeper's guide to the lamp"
    assert document.filename == "127.0.0.1-guide.html"
    assert document.status == "queued"
    assert (item.citation, item.link, item.external_id) == (url, url, url)
    assert item.sha256 == document.sha256
    events = AuditEvent.objects.filter(workspace=personas.workspace_a)
    assert set(events.values_list("action", flat=True)) == {"source.create", "document.upload"}
    assert events.get(action="source.create").data["url"] == url


def test_several_urls_make_one_source_each_and_the_same_url_again_is_checked_not_duplicated(personas, web):
    web.pages["/other"] = {"body": b"<html><head><title>Other</title></head><body><p>Another page.</p></body></html>"}
    first = imported(personas, f"{web.url}/guide", f"{web.url}/other")
    assert [s.message for s in first] == ["1 page: 1 added.", "1 page: 1 added."]
    (again,) = imported(personas, f"{web.url}/guide")
    assert again.pk == first[0].pk
    assert again.message == "1 page: 1 unchanged."
    assert Source.objects.filter(workspace=personas.workspace_a).count() == 2
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 2


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_page_on_a_loopback_address_is_refused_when_the_setting_does_not_allow_it(personas, web, settings, host):
    settings.SOURCES_ALLOWED_HOSTS = []
    (source,) = imported(personas, f"http://{host}:{web.port}/guide")
    assert source.status == SourceStatus.FAILED
    assert "a loopback address: TrustRAG does not fetch from it" in source.message
    assert "SOURCES_ALLOWED_HOSTS" in source.message
    assert web.requests == []
    assert not Document.objects.filter(workspace=personas.workspace_a).exists()


@pytest.mark.parametrize("target", ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/"])
def test_a_page_redirecting_to_a_private_or_metadata_address_is_refused(personas, web, target):
    web.pages["/go"] = {"status": 302, "headers": {"Location": target}}
    (source,) = imported(personas, f"{web.url}/go")
    assert source.status == SourceStatus.FAILED
    assert f"{target.split('/')[2]} is a" in source.message
    assert not Document.objects.filter(workspace=personas.workspace_a).exists()


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ({"body": b"%PDF-1.7 not a page", "type": "application/pdf"}, "is application/pdf, not a web page"),
        ({"status": 404}, "answered 404; nothing was imported"),
        ({"body": b"<p>" + b"z" * 5000 + b"</p>"}, "over the 4,096-byte limit (SOURCES_FETCH_MAX_BYTES)"),
        ({"body": b"<p>late</p>", "delay": 1.5}, "did not answer within 0.5 s"),
    ],
)
def test_oversized_slow_and_non_html_pages_are_refused_with_a_message(personas, web, settings, page, message):
    settings.SOURCES_FETCH_MAX_BYTES, settings.SOURCES_FETCH_TIMEOUT_S = 4096, 0.5
    web.pages["/x"] = page
    (source,) = imported(personas, f"{web.url}/x")
    assert source.status == SourceStatus.FAILED
    assert message in source.message
    assert not Document.objects.filter(workspace=personas.workspace_a).exists()


@pytest.mark.parametrize(
    ("urls", "message"),
    [
        (["file:///etc/passwd"], "is not an http:// or https:// address"),
        (["  ", ""], "Enter one or more web addresses"),
        ([f"https://example.org/{i}" for i in range(21)], "Import at most 20 web pages at once."),
    ],
)
def test_what_is_not_a_web_address_is_refused_before_anything_is_queued(personas, urls, message):
    with pytest.raises(ApplicationError, match=message):
        source_urls_create(workspace=personas.workspace_a, actor=personas.member, urls=urls)
    assert not Source.objects.exists()


def test_a_recheck_of_an_unchanged_page_changes_nothing_and_a_changed_one_replaces_the_document(personas, web):
    (source,) = imported(personas, f"{web.url}/guide")
    document = Document.objects.get(workspace=personas.workspace_a)
    before = (document.sha256, document.file.name)
    source_check(workspace=personas.workspace_a, actor=personas.member, source_id=source.pk)
    source = importing.source_run(workspace=personas.workspace_a, source_id=source.pk)
    assert source.message == "1 page: 1 unchanged."
    document.refresh_from_db()
    assert (document.sha256, document.file.name) == before
    assert not AuditEvent.objects.filter(action="document.replace").exists()

    web.pages["/guide"] = {"body": web.pages["/guide"]["body"].replace(b"thirty minutes before", b"an hour before")}
    source_check(workspace=personas.workspace_a, actor=personas.member, source_id=source.pk)
    source = importing.source_run(workspace=personas.workspace_a, source_id=source.pk)
    assert source.message == "1 page: 1 changed and re-ingested."
    document.refresh_from_db()
    assert document.sha256 != before[0]
    assert document.status == "queued"
    assert b"an hour before" in document.file.open("rb").read()
    assert Document.objects.filter(workspace=personas.workspace_a).count() == 1, "the same document, new content"
    assert SourceItem.objects.get(source=source).sha256 == document.sha256
