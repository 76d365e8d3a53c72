"""A source's check, in the worker: fetch what it names, add what is new, re-ingest what changed
(by content hash), leave the rest alone. The documents go through the documents app's services,
so deduplication, ingestion and "source changed" on answers work as for any upload."""

from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.errors import ApplicationError
from apps.core.ratelimit import window_hit
from apps.documents.services import document_create, document_replace
from apps.sources.fetch import FetchPolicy, FetchRefused, fetch
from apps.sources.models import Source, SourceItem, SourceKind, SourceStatus
from apps.sources.pubmed import Article, Eutils, EutilsConfig, PubMedError, article_html
from apps.workspaces.models import Workspace

log = logging.getLogger(__name__)
ADDED, CHANGED, UNCHANGED, ELSEWHERE = "added", "changed", "unchanged", "elsewhere"


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def note(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    def message(self, unit: str) -> str:
        total = sum(self.counts.values()) + len(self.problems)
        words = {
            ADDED: "added",
            CHANGED: "changed and re-ingested",
            UNCHANGED: "unchanged",
            ELSEWHERE: "already in the workspace",
        }
        parts = [f"{self.counts[k]} {w}" for k, w in words.items() if self.counts.get(k)]
        parts += [f"{len(self.problems)} refused ({'; '.join(self.problems[:3])})"] if self.problems else []
        return f"{total} {unit}{'' if total == 1 else 's'}: {', '.join(parts) or 'nothing found'}."


def source_run(*, workspace: Workspace, source_id) -> Source | None:
    """Check one source. Safe to run twice: only the run that claims it works."""
    if not _claim(workspace, source_id):
        log.info("source %s is not claimable (settled, or another worker checks it)", source_id)
        return None
    source = Source.objects.get(workspace=workspace, pk=source_id)
    try:
        message = _run_pubmed(source) if source.kind == SourceKind.PUBMED else _run_url(source)
    except (PubMedError, FetchRefused, ApplicationError) as exc:
        return _finish(source, SourceStatus.FAILED, str(exc))
    return _finish(source, SourceStatus.DONE, message)


def _run_pubmed(source: Source) -> str:
    client = Eutils(eutils_config(), throttle=ncbi_throttle)
    pmids = client.search(source.query, source.max_count)
    others = set(
        SourceItem.objects.filter(workspace=source.workspace, kind=SourceKind.PUBMED, external_id__in=pmids)
        .exclude(source=source)
        .values_list("external_id", flat=True)
    )
    tally = Tally()
    done = len(others)
    for _ in others:
        tally.note(ELSEWHERE)
    _progress(source, done, len(pmids))
    for article in client.fetch([p for p in pmids if p not in others]):
        _keep(source, tally, lambda a=article: _article_item(source, a))
        done += 1
        _progress(source, done, len(pmids))
    return tally.message("article")


def _article_item(source: Source, article: Article) -> str:
    return upsert_item(
        source,
        external_id=article.pmid,
        data=article_html(article),
        filename=f"pubmed-{article.pmid}.html",
        title=article.title or f"PMID {article.pmid}",
        metadata=article.metadata(),
    )


def _run_url(source: Source) -> str:
    _progress(source, 0, 1)
    page = fetch(source.url, fetch_policy())
    if page.status != 200:
        raise FetchRefused(f"{source.url} answered {page.status}; nothing was imported.")
    title = page_title(page.body) or source.url
    tally = Tally()
    metadata = {"title": title, "url": source.url, "fetched_from": page.url, "content_type": page.content_type}
    filename = page_filename(source.url)
    _keep(
        source,
        tally,
        lambda: upsert_item(source, external_id=source.url, data=page.body, filename=filename, title=title, metadata=metadata),
    )
    _progress(source, 1, 1)
    return tally.message("page")


def _keep(source: Source, tally: Tally, step) -> None:
    """One item's outcome counted; one refused (empty, too large) does not stop the others."""
    try:
        tally.note(step())
    except ApplicationError as exc:
        tally.problems.append(exc.message)


def upsert_item(source: Source, *, external_id: str, data: bytes, filename: str, title: str, metadata: dict) -> str:
    """Add the item, re-ingest it when its content hash changed, or leave it alone."""
    digest = hashlib.sha256(data).hexdigest()
    workspace = source.workspace
    item = SourceItem.objects.filter(workspace=workspace, kind=source.kind, external_id=external_id).first()
    if item is not None and item.source_id != source.pk:
        return ELSEWHERE
    if item is not None and item.sha256 == digest:
        item.save(update_fields=["checked_at"])
        return UNCHANGED
    if item is not None:
        document_replace(workspace=workspace, actor=None, document_id=item.document_id, data=data)
        SourceItem.objects.filter(pk=item.pk).update(sha256=digest, metadata=metadata, checked_at=timezone.now())
        return CHANGED
    try:
        with transaction.atomic():
            document, created = document_create(workspace=workspace, actor=None, filename=filename, data=data, title=title)
            SourceItem.objects.create(
                workspace=workspace,
                source=source,
                document=document,
                kind=source.kind,
                external_id=external_id,
                sha256=digest,
                metadata=metadata,
            )
    except IntegrityError:
        return ELSEWHERE  # another source brought it in meanwhile
    return ADDED if created else ELSEWHERE


def _claim(workspace: Workspace, source_id) -> bool:
    now = timezone.now()
    lapsed = Q(status=SourceStatus.RUNNING, heartbeat_at__lt=now - timedelta(seconds=settings.SOURCES_LEASE_S))
    claimable = Source.objects.filter(Q(status=SourceStatus.QUEUED) | lapsed, workspace=workspace, pk=source_id)
    return claimable.update(status=SourceStatus.RUNNING, heartbeat_at=now, progress_done=0, progress_total=0, message="") == 1


def _progress(source: Source, done: int, total: int) -> None:
    Source.objects.filter(pk=source.pk, status=SourceStatus.RUNNING).update(
        progress_done=done, progress_total=total, heartbeat_at=timezone.now()
    )


def _finish(source: Source, status: str, message: str) -> Source:
    Source.objects.filter(pk=source.pk).update(status=status, message=message, last_checked_at=timezone.now())
    source.refresh_from_db()
    return source


def fetch_policy() -> FetchPolicy:
    return FetchPolicy(
        allowed=tuple(settings.SOURCES_ALLOWED_HOSTS),
        timeout_s=settings.SOURCES_FETCH_TIMEOUT_S,
        max_bytes=min(settings.SOURCES_FETCH_MAX_BYTES, settings.UPLOAD_MAX_BYTES),
        max_redirects=settings.SOURCES_MAX_REDIRECTS,
    )


def eutils_config() -> EutilsConfig:
    return EutilsConfig(
        base_url=settings.NCBI_BASE_URL,
        tool=settings.NCBI_TOOL,
        email=settings.NCBI_EMAIL,
        api_key=settings.NCBI_API_KEY,
        timeout_s=settings.NCBI_TIMEOUT_S,
        retries=settings.NCBI_MAX_RETRIES,
        backoff_s=settings.NCBI_BACKOFF_S,
    )


def ncbi_throttle() -> None:
    """Wait for a turn under NCBI's rate, counted in Redis so every worker shares it; without
    Redis, this process spaces its own requests."""
    rate = eutils_config().rate
    try:
        while (wait := window_hit("sources:ncbi-eutils", limit=rate, window_s=1.0)) > 0:
            time.sleep(wait)
    except Exception as exc:  # a Redis outage must not stop an import
        log.warning("NCBI rate counted in this process only (%s)", exc.__class__.__name__)
        time.sleep(1.0 / rate)


class _Title(HTMLParser):
    def __init__(self):
        super().__init__()
        self.inside, self.text = False, ""

    def handle_starttag(self, tag, attrs):
        self.inside = tag == "title" and not self.text

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.text += data


def page_title(body: bytes) -> str:
    parser = _Title()
    parser.feed(body[:65536].decode("utf-8", errors="replace"))
    return " ".join(parser.text.split())[:255]


def page_filename(url: str) -> str:
    """A readable file name for a page ("example.org-guide-intro.html"); the parser reads it as HTML."""
    parts = urlsplit(url)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{parts.hostname}{parts.path}").strip("-.") or "page"
    return f"{stem[:200]}.html"
