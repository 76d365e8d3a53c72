"""What the apps below apikeys need to know of a credential without importing it."""

from __future__ import annotations


class WorkspaceCredential:
    """Base of a credential that belongs to one workspace and carries a role (a workspace API
    key, `apikeys.ApiKey`): the tenancy resolver, the rate limit and idempotency tell it from
    a person's session or token by this class. It has `pk`, `workspace`, `workspace_id`,
    `role` and `label`."""
