from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.core.models import TenantModel


class AuditRecord(TenantModel):
    """One per answer. Append-only: a database trigger refuses UPDATE and DELETE,
    and each record's hash covers its content and the previous record's hash."""

    sequence = models.PositiveBigIntegerField()
    query_run_id = models.UUIDField()
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    actor_label = models.CharField(max_length=200)
    payload = models.JSONField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["workspace", "sequence"]
        constraints = [models.UniqueConstraint(fields=["workspace", "sequence"], name="auditrecord_unique_sequence")]
        indexes = [models.Index(fields=["workspace", "query_run_id"], name="auditrecord_ws_run")]


class AuditEvent(TenantModel):
    """An administrative action (membership, settings, keys) in a workspace."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=60)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="auditevent_ws_created")]
