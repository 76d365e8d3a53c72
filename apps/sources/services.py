"""Sources: what a person asks of them (create, re-check, schedule, delete). The checks themselves
run in the worker (`apps.sources.importing`)."""

from __future__ import annotations

import contextlib
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from apps.core.broker import send_on_commit
from apps.core.errors import ApplicationError
from apps.core.events import event_record
from apps.documents.services import document_delete
from apps.sources.fetch import FetchRefused, checkable_url
from apps.sources.models import SCHEDULE_SECONDS, Schedule, Source, SourceKind, SourceStatus
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access, require


def source_pubmed_create(
    *, workspace: Workspace, actor, query: str, max_count: int = 50, schedule: str = Schedule.OFF
) -> tuple[Source, bool]:
    """Import a PubMed query's articles (in the worker). The same query again re-checks the
    source already there, which adds only the articles not yet in the workspace."""
    require(actor, "contribute", workspace=workspace)
    query = " ".join(query.split())
    if not query:
        raise ApplicationError("Enter a PubMed query.", field="query")
    if not 1 <= max_count <= settings.PUBMED_MAX_COUNT:
        raise ApplicationError(f"The number of articles must be between 1 and {settings.PUBMED_MAX_COUNT}.", field="max_count")
    return _create(workspace, actor, {"kind": SourceKind.PUBMED, "query": query, "max_count": max_count}, schedule)


def source_urls_create(*, workspace: Workspace, actor, urls: list[str], schedule: str = Schedule.OFF) -> list[tuple[Source, bool]]:
    """Import web pages, one source each (fetched in the worker, where every address is checked)."""
    require(actor, "contribute", workspace=workspace)
    urls = list(dict.fromkeys(u.strip() for u in urls if u.strip()))
    if not urls:
        raise ApplicationError("Enter one or more web addresses (URLs), one a line.", field="urls")
    if len(urls) > settings.SOURCES_MAX_URLS:
        raise ApplicationError(f"Import at most {settings.SOURCES_MAX_URLS} web pages at once.", field="urls")
    for url in urls:
        try:
            checkable_url(url)
        except FetchRefused as exc:
            raise ApplicationError(str(exc), field="urls") from None
    with transaction.atomic():
        return [_create(workspace, actor, {"kind": SourceKind.URL, "url": url}, schedule) for url in urls]


def source_check(*, workspace: Workspace, actor, source_id) -> Source:
    """Check a source again now: new articles are added, changed ones re-ingested, the rest left alone."""
    require(actor, "contribute", workspace=workspace)
    with transaction.atomic():
        source = access(Source, workspace, source_id, Source.objects.select_for_update())
        _queue(source, "a re-check was asked for")
        event_record(workspace=workspace, actor=actor, action="source.check", data=_described(source))
    return source


def source_schedule(*, workspace: Workspace, actor, source_id, schedule: str) -> Source:
    """How often the scheduler re-checks a source (admins and owners): off, daily or weekly."""
    require(actor, "schedule_sources", workspace=workspace)
    _check_schedule(schedule)
    with transaction.atomic():
        source = access(Source, workspace, source_id, Source.objects.select_for_update())
        before, source.schedule = source.schedule, schedule
        source.save(update_fields=["schedule"])
        event_record(workspace=workspace, actor=actor, action="source.schedule", data=_described(source) | {"from": before, "to": schedule})
    return source


def source_delete(*, workspace: Workspace, actor, source_id) -> int:
    """Delete a source and the documents it brought in (answers citing them say so). Returns how
    many documents went."""
    require(actor, "contribute", workspace=workspace)
    with transaction.atomic():
        source = access(Source, workspace, source_id, Source.objects.select_for_update())
        if source.status == SourceStatus.RUNNING and not _lapsed(source):
            raise ApplicationError("This source is being checked; delete it when the check has finished.", status=409, code="conflict")
        documents = list(dict.fromkeys(source.items.values_list("document_id", flat=True)))
        for document_id in documents:
            with contextlib.suppress(Http404):  # deleted meanwhile, from the Documents page
                document_delete(workspace=workspace, actor=actor, document_id=document_id)
        event_record(workspace=workspace, actor=actor, action="source.delete", data=_described(source) | {"documents": len(documents)})
        source.delete()
    return len(documents)


def sources_check_due(*, now=None) -> int:
    """Queue every scheduled source whose interval has passed since its last check, and every
    check whose worker stopped beating. All workspaces: this runs from the scheduler."""
    now = now or timezone.now()
    queued = 0
    for source in Source.objects.filter(~Q(schedule=Schedule.OFF) | Q(status=SourceStatus.RUNNING)).only(
        "pk", "workspace_id", "schedule", "status", "last_checked_at", "heartbeat_at"
    ):
        if _due(source, now) and Source.objects.filter(pk=source.pk, status=source.status).update(status=SourceStatus.QUEUED):
            _enqueue(source)
            queued += 1
    return queued


def source_mark_failed(*, workspace: Workspace, source_id, message: str) -> None:
    Source.objects.filter(workspace=workspace, pk=source_id).exclude(status=SourceStatus.DONE).update(
        status=SourceStatus.FAILED, message=message, last_checked_at=timezone.now()
    )


def _create(workspace: Workspace, actor, fields: dict, schedule: str) -> tuple[Source, bool]:
    _check_schedule(schedule)
    if schedule != Schedule.OFF:
        require(actor, "schedule_sources", workspace=workspace)
    key = {"kind": fields["kind"], "query": fields.get("query", ""), "url": fields.get("url", "")}
    with transaction.atomic():
        existing = Source.objects.select_for_update().filter(workspace=workspace, **key).first()
        if existing is not None:
            _queue(existing, "it was imported again")
            event_record(workspace=workspace, actor=actor, action="source.check", data=_described(existing))
            return existing, False
        user = getattr(actor, "user", None)
        source = Source.objects.create(workspace=workspace, schedule=schedule, created_by=user, **fields)
        event_record(workspace=workspace, actor=actor, action="source.create", data=_described(source) | {"schedule": schedule})
        _enqueue(source)
    return source, True


def _queue(source: Source, why: str) -> None:
    if source.status == SourceStatus.RUNNING and not _lapsed(source):
        raise ApplicationError("This source is being checked right now; its progress is shown beside it.", status=409, code="conflict")
    Source.objects.filter(pk=source.pk).update(status=SourceStatus.QUEUED, message=f"Queued: {why}.")
    source.refresh_from_db()
    _enqueue(source)


def _enqueue(source: Source) -> None:
    from apps.sources.tasks import check_source

    send_on_commit(check_source, str(source.workspace_id), str(source.pk))


def _due(source: Source, now) -> bool:
    if source.status == SourceStatus.RUNNING:
        return _lapsed(source, now)
    if source.status == SourceStatus.QUEUED or source.schedule == Schedule.OFF:
        return False
    interval = timedelta(seconds=SCHEDULE_SECONDS[source.schedule])
    return source.last_checked_at is None or now - source.last_checked_at >= interval


def _lapsed(source: Source, now=None) -> bool:
    beat = source.heartbeat_at
    return beat is None or beat < (now or timezone.now()) - timedelta(seconds=settings.SOURCES_LEASE_S)


def _check_schedule(schedule: str) -> None:
    if schedule not in Schedule.values:
        raise ApplicationError(f"The schedule must be one of {', '.join(Schedule.values)}.", field="schedule")


def _described(source: Source) -> dict:
    return {"source": str(source.pk), "kind": source.kind, "query": source.query, "url": source.url}
