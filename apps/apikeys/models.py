from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.core.credentials import WorkspaceCredential
from apps.workspaces.models import Role, TenantModel

# A key acts for a system, not a person: it can do what an admin, a member or a viewer can,
# never what only an owner can (owners are people who answer for the workspace).
KEY_ROLES = (Role.ADMIN, Role.MEMBER, Role.VIEWER)
KEY_ROLE_CHOICES = [(role.value, role.label) for role in KEY_ROLES]


class ApiKey(TenantModel, WorkspaceCredential):
    """A workspace API key: shown once at creation, stored only as the SHA-256 of its secret.

    `prefix` and `key_hash` are unique across workspaces, not per workspace: the key is what
    names its workspace, so it has to be found before any workspace is known.
    """

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=20, unique=True)
    key_hash = models.CharField(max_length=64, unique=True)
    role = models.CharField(max_length=10, choices=KEY_ROLE_CHOICES)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.CheckConstraint(condition=models.Q(role__in=[r.value for r in KEY_ROLES]), name="apikey_role_valid")]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="apikey_ws_created")]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        """How the audit trail names what this key did."""
        return f"key:{self.prefix} ({self.name})"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
