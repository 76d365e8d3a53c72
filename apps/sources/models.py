from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.workspaces.models import TenantModel


class SourceKind(models.TextChoices):
    PUBMED = "pubmed", "PubMed query"
    URL = "url", "Web page"


class SourceStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Checking"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Schedule(models.TextChoices):
    OFF = "off", "Only when asked"
    DAILY = "daily", "Daily"
    WEEKLY = "weekly", "Weekly"


SCHEDULE_SECONDS = {Schedule.DAILY: 86_400, Schedule.WEEKLY: 7 * 86_400}


class Source(TenantModel):
    """Where documents come from besides uploads: a PubMed query or a web page, checked again on
    demand or on its schedule."""

    kind = models.CharField(max_length=8, choices=SourceKind.choices)
    query = models.TextField(blank=True)  # a PubMed query
    url = models.URLField(max_length=2000, blank=True)  # a web page
    max_count = models.PositiveIntegerField(default=50)  # a query's articles at most
    schedule = models.CharField(max_length=8, choices=Schedule.choices, default=Schedule.OFF)
    status = models.CharField(max_length=8, choices=SourceStatus.choices, default=SourceStatus.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    # What the last check did ("12 articles: 10 added, 2 already in the workspace") or why it failed.
    message = models.TextField(blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(kind="pubmed") & ~models.Q(query="")) | (models.Q(kind="url") & ~models.Q(url="")),
                name="source_has_its_query_or_url",
            ),
        ]
        indexes = [models.Index(fields=["workspace", "status"], name="source_ws_status")]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return self.query if self.kind == SourceKind.PUBMED else self.url

    @property
    def settled(self) -> bool:
        return self.status in (SourceStatus.DONE, SourceStatus.FAILED)


class SourceItem(TenantModel):
    """One document a source brought in — a PubMed article (by PMID) or a web page (by URL) — with
    the content hash it was last seen with, so a re-check knows unchanged from changed."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="items")
    document = models.ForeignKey("documents.Document", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=8, choices=SourceKind.choices)
    external_id = models.CharField(max_length=2000)  # a PMID, or the page's URL
    sha256 = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, blank=True)  # title, journal, year, authors, DOI…
    checked_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            # An article or page is in a workspace once, whichever source brought it.
            models.UniqueConstraint(fields=["workspace", "kind", "external_id"], name="sourceitem_unique_per_workspace"),
        ]
        indexes = [models.Index(fields=["workspace", "document"], name="sourceitem_ws_document")]

    def __str__(self) -> str:
        return self.citation

    @property
    def citation(self) -> str:
        """How an answer cites it: "PMID 27633186", or the page's URL."""
        return f"PMID {self.external_id}" if self.kind == SourceKind.PUBMED else self.external_id

    @property
    def link(self) -> str:
        return f"https://pubmed.ncbi.nlm.nih.gov/{self.external_id}/" if self.kind == SourceKind.PUBMED else self.external_id
