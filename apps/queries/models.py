from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.workspaces.models import TenantModel


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
    threshold_override = models.FloatField(null=True, blank=True)
    actor_label = models.CharField(max_length=200, blank=True)
    # Live progress: [{"name", "status", "ms", "detail"}] as each stage completes, and the
    # answer text as the provider streams it.
    stages = models.JSONField(default=list, blank=True)
    partial_answer = models.TextField(blank=True)
    # Every provider attempt: provider, model, outcome, ms, error class and message (no secret).
    attempts = models.JSONField(default=list, blank=True)
    # Trust: the three components, the weighted confidence in [0, 1] and the risk label.
    trust = models.JSONField(default=dict, blank=True)
    confidence = models.FloatField(null=True, blank=True)  # null for a refusal: nothing was claimed
    risk = models.CharField(max_length=10, blank=True)  # low / medium / high, or refused
    # For a refusal: who refused (gate, corrective, provider), why, and the evidence with the
    # threshold it was held to (apps.pipeline.answer.Refusal); null for an answer.
    refusal = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    # Asked by an evaluation run (apps.evals), not a person: kept out of the history lists.
    evaluation = models.BooleanField(default=False)
    # Set when a document this answer cites was deleted or re-indexed with different text:
    # [{"source", "document_id", "title", "change": "deleted" | "changed"}], and when it was seen.
    source_changes = models.JSONField(default=list, blank=True)
    source_changed_at = models.DateTimeField(null=True, blank=True)
    # A re-verification: the answer of `reverifies` judged again against its sources' current text.
    reverifies = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reverifications")

    STAGES = ("retrieve", "rerank", "correct", "gate", "generate", "verify", "score")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="queryrun_ws_created")]

    @property
    def settled(self) -> bool:
        return self.status in (QueryStatus.DONE, QueryStatus.FAILED)

    @property
    def stage_rows(self) -> list[dict]:
        """Every stage in pipeline order, with what is known of it so far; a re-verification ran
        one stage (verify) and shows that one, finished."""
        if self.reverifies_id:
            return list(self.stages)
        seen = {s["name"]: s for s in self.stages}
        return [seen.get(name, {"name": name, "status": "pending"}) for name in self.STAGES]
