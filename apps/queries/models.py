from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.core.models import TenantModel


class QueryMode(models.TextChoices):
    VERIFIED = "verified", "Verified"
    NAIVE = "naive", "Naive"


class QueryStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class QueryRun(TenantModel):
    question = models.TextField()
    mode = models.CharField(max_length=10, choices=QueryMode.choices, default=QueryMode.VERIFIED)
    status = models.CharField(max_length=10, choices=QueryStatus.choices, default=QueryStatus.QUEUED)
    asked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    answer = models.TextField(blank=True)
    insufficient = models.BooleanField(default=False)
    provider = models.CharField(max_length=40, blank=True)
    claims = models.JSONField(default=list, blank=True)
    sources = models.JSONField(default=list, blank=True)
    grounding = models.FloatField(null=True, blank=True)
    # The confidence gate's decision: enabled, threshold, top_score, passed, reason.
    gate = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="queryrun_ws_created")]
