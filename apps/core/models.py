from __future__ import annotations

import uuid

from django.db import models


class TenantModel(models.Model):
    """Base of every tenant-owned row: a UUID public id and a non-null workspace."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
