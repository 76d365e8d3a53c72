from __future__ import annotations

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models


class TenantModel(models.Model):
    """Base of every tenant-owned row: a UUID public id and a non-null workspace."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class IdempotencyRecord(TenantModel):
    """The first response to a request sent with an `Idempotency-Key`, replayed to repeats.

    One row per workspace + credential + key; the unique constraint is what keeps two
    concurrent repeats from both doing the work. `status_code` is null while the first
    request is still running."""

    credential = models.CharField(max_length=80)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    body = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    headers = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "credential", "key"], name="idempotency_unique_key_per_credential"),
        ]
        # Not per workspace: the hourly purge forgets old responses of every workspace at once.
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    def __str__(self) -> str:
        return f"{self.key} by {self.credential}"
