"""Keeping sources in sync: a re-check of an unchanged source changes nothing (content hash); a
changed article is re-ingested and the answers citing it are marked "source changed", the
product's one mechanism for a document whose text changed; scheduled sources are re-checked by
the scheduler's task, off by default; in the worker, an import runs end to end."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.audits.models import AuditRecord
from apps.documents import services as documents
from apps.documents.models import Document
from apps.queries.services import query_answer
from apps.sources import importing
from apps.sources.models import Schedule, Source, SourceItem, SourceStatus
from apps.sources.services import source_check, source_pubmed_create, source_schedule, source_urls_create, sources_check_due
from tests.conftest import wait_until
from tests.sources.fakes import PMIDS, QUERY, record

QUESTION = "How many hours a day did lighthouse keepers sleep during night-shift weeks?"


def ingest_all(workspace) -> None:
    for document in Document.objects.filter(workspace=workspace, status="queued"):
        documents.document_ingest(workspace=workspace, document_id=document.pk)


@pytest.fixture
def imported(personas, eutils) -> Source:
    source, _ = source_pubmed_create(workspace=personas.workspace_a, actor=personas.member, query=QUERY)
    source = importing.source_run(workspace=personas.workspace_a, source_id=source.pk)
    ingest_all(personas.workspace_a)
    return source


def recheck(personas, source) -> Source:
    source_check(workspace=personas.workspace_a, actor=personas.member, source_id=source.pk)
    source = importing.source_run(workspace=personas.workspace_a, source_id=source.pk)
    ingest_all(personas.workspace_a)
    return source


def test_an_answer_cites_the_pmid_with_its_link(personas, imported):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION)
    assert not run.insufficient
    item = SourceItem.objects.get(external_id="27633186")
    cited = {run.sources[c["source"] - 1]["document_id"] for c in run.claims}
    assert str(item.document_id) in cited
    page = personas.client("viewer").get(reverse("answer", args=["acme", run.pk])).content.decode()
    link = '<a class="origin" href="https://pubmed.ncbi.nlm.nih.gov/27633186/" rel="noopener noreferrer nofollow">PMID 27633186</a>'
    assert link in page
    record = AuditRecord.objects.get(workspace=personas.workspace_a, query_run_id=run.pk)
    assert link in personas.client("viewer").get(reverse("audit_detail", args=["acme", record.pk])).content.decode()


def test_rechecking_an_unchanged_source_changes_nothing(personas, imported):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION)
    before = {d.pk: (d.sha256, d.updated_at, d.status) for d in Document.objects.filter(workspace=personas.workspace_a)}
    source = recheck(personas, imported)
    assert source.message == "4 articles: 4 unchanged."
    after = {d.pk: (d.sha256, d.updated_at, d.status) for d in Document.objects.filter(workspace=personas.workspace_a)}
    assert after == before
    run.refresh_from_db()
    assert run.source_changed_at is None


def test_a_changed_abstract_is_re_ingested_and_the_answers_citing_it_are_marked(personas, imported, eutils):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION)
    item = SourceItem.objects.get(external_id="27633186")
    assert any(s["document_id"] == str(item.document_id) for s in run.sources)
    eutils.records["27633186"] = record("27633186").replace("5.8 hours a day", "4.9 hours a day")
    source = recheck(personas, imported)
    assert source.message == "4 articles: 1 changed and re-ingested, 3 unchanged."
    document = Document.objects.get(pk=item.document_id)
    assert document.status == "ready"
    assert "4.9 hours a day" in document.text
    run.refresh_from_db()
    assert run.source_changed_at is not None
    assert {c["change"] for c in run.source_changes} == {"changed"}
    assert {c["document_id"] for c in run.source_changes} == {str(item.document_id)}
    page = personas.client("viewer").get(reverse("answer", args=["acme", run.pk])).content.decode()
    assert "source changed" in page


def test_the_scheduler_rechecks_only_scheduled_sources_that_are_due(personas, eutils, web):
    now = timezone.now()
    daily, _ = source_pubmed_create(workspace=personas.workspace_a, actor=personas.admin, query=QUERY, schedule=Schedule.DAILY)
    ((page_source, _),) = source_urls_create(workspace=personas.workspace_a, actor=personas.member, urls=[f"{web.url}/guide"])
    assert page_source.schedule == Schedule.OFF, "off by default"
    for source in (daily, page_source):
        importing.source_run(workspace=personas.workspace_a, source_id=source.pk)
    assert sources_check_due(now=now + timedelta(hours=23)) == 0
    assert sources_check_due(now=now + timedelta(days=1, minutes=1)) == 1
    assert Source.objects.get(pk=daily.pk).status == SourceStatus.QUEUED
    assert Source.objects.get(pk=page_source.pk).status == SourceStatus.DONE
    source_schedule(workspace=personas.workspace_a, actor=personas.admin, source_id=page_source.pk, schedule=Schedule.WEEKLY)
    assert sources_check_due(now=now + timedelta(days=6)) == 0
    assert sources_check_due(now=now + timedelta(days=7, minutes=1)) == 1


def test_a_check_whose_worker_died_is_taken_up_again(personas, eutils, settings):
    source, _ = source_pubmed_create(workspace=personas.workspace_a, actor=personas.member, query=QUERY)
    Source.objects.filter(pk=source.pk).update(status=SourceStatus.RUNNING, heartbeat_at=timezone.now())
    assert importing.source_run(workspace=personas.workspace_a, source_id=source.pk) is None, "another worker holds it"
    assert sources_check_due() == 0
    later = timezone.now() + timedelta(seconds=settings.SOURCES_LEASE_S + 1)
    assert sources_check_due(now=later) == 1
    assert importing.source_run(workspace=personas.workspace_a, source_id=source.pk).status == SourceStatus.DONE


@pytest.mark.django_db(transaction=True)
def test_in_the_worker_an_import_runs_with_progress_and_its_documents_are_indexed(personas, eutils, web, celery_worker):
    source, _ = source_pubmed_create(workspace=personas.workspace_a, actor=personas.member, query=QUERY, max_count=2)
    ((page, _),) = source_urls_create(workspace=personas.workspace_a, actor=personas.member, urls=[f"{web.url}/guide"])
    done = wait_until(lambda: Source.objects.get(pk=source.pk).settled and Source.objects.get(pk=page.pk).settled, what="both checks")
    assert done
    source, page = Source.objects.get(pk=source.pk), Source.objects.get(pk=page.pk)
    assert (source.status, source.message, source.progress_done, source.progress_total) == ("done", "2 articles: 2 added.", 2, 2)
    assert (page.status, page.message) == ("done", "1 page: 1 added.")
    assert [c["params"]["id"] for c in eutils.calls("efetch")] == [",".join(PMIDS[:2])]
    ready = wait_until(
        lambda: Document.objects.filter(workspace=personas.workspace_a, status="ready").count() == 3, timeout=180, what="indexing"
    )
    assert ready
    guide = Document.objects.get(pk=SourceItem.objects.get(source=page).document_id)
    assert "The lamp is lit thirty minutes before sunset" in guide.text
    assert "never read" not in guide.text, "the page's script is not its text"
