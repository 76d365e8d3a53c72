from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.apikeys.models import KEY_ROLES, ApiKey
from apps.core.errors import ApplicationError
from apps.core.events import event_record
from apps.core.guard import clean_text
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.tenancy import KeyMembership, access, require

KEY_PREFIX = "trk_"
# last_used_at is written at most this often per key, so a busy integration costs no extra
# write per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def apikey_hash(secret: str) -> str:
    """A key carries 256 random bits, so one SHA-256 is as good as a slow password hash here."""
    return hashlib.sha256(secret.encode()).hexdigest()


def apikey_create(*, workspace: Workspace, actor: Membership | KeyMembership | None, name: str, role: str) -> tuple[ApiKey, str]:
    """A new key and its secret, which is returned this once and stored only as a hash.

    `actor` None is the operator at the shell (`manage.py create_api_key`)."""
    require(actor, "manage_keys", workspace=workspace)
    if role not in KEY_ROLES:
        raise ApplicationError(f"A key's role is one of {', '.join(KEY_ROLES)}, not “{role}”.", field="role")
    name = " ".join(clean_text(name, field="name", max_length=100, one_line=True).split())
    if not name:
        raise ApplicationError("Name the key after what will use it, e.g. “CI upload job”.", field="name")
    prefix = KEY_PREFIX + secrets.token_hex(5)
    secret = f"{prefix}_{secrets.token_urlsafe(32)}"
    person = actor.user if actor is not None else None
    with transaction.atomic():
        key = ApiKey.objects.create(
            workspace=workspace, name=name, role=role, prefix=prefix, key_hash=apikey_hash(secret), created_by=person
        )
        data = {"key": prefix, "name": name, "role": role} | ({} if actor else {"via": "manage.py create_api_key"})
        event_record(workspace=workspace, actor=actor, action="apikey.create", data=data)
    return key, secret


def apikey_revoke(*, workspace: Workspace, actor: Membership | KeyMembership, key_id) -> ApiKey:
    """Revoke a key for good; revoking it again changes nothing."""
    require(actor, "manage_keys", workspace=workspace)
    with transaction.atomic():
        key = access(ApiKey, workspace, key_id, ApiKey.objects.select_for_update())
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
            data = {"key": key.prefix, "name": key.name, "role": key.role}
            event_record(workspace=workspace, actor=actor, action="apikey.revoke", data=data)
    return key


def apikey_authenticate(*, secret: str) -> ApiKey | None:
    """The active key with this secret, its last use noted; None for unknown and revoked keys alike."""
    key = ApiKey.objects.select_related("workspace").filter(key_hash=apikey_hash(secret), revoked_at__isnull=True).first()
    if key is not None:
        now = timezone.now()
        if key.last_used_at is None or key.last_used_at < now - LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
    return key
