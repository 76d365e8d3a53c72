from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.text import slugify

from apps.audits.services import audit_event_record
from apps.core.crypto import encrypt
from apps.core.errors import ApplicationError
from apps.core.tenancy import check_role
from apps.pipeline.providers import PROVIDERS
from apps.workspaces.models import Membership, Role, Workspace, WorkspaceSettings

User = get_user_model()
CHAT_PROVIDERS = ("groq", "zhipuai")


def workspace_create(*, actor, name: str, slug: str = "") -> Workspace:
    name = name.strip()
    if not name:
        raise ApplicationError("Give the workspace a name.", field="name")
    slug = slugify(slug or name)[:60]
    if not slug:
        raise ApplicationError("The name needs at least one letter or digit to make a URL from.", field="name")
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(name=name[:120], slug=slug)
            WorkspaceSettings.objects.create(workspace=workspace)
            Membership.objects.create(workspace=workspace, user=actor, role=Role.OWNER)
            audit_event_record(workspace=workspace, actor=actor, action="workspace.create", data={"name": workspace.name, "slug": slug})
    except IntegrityError:
        raise ApplicationError(f"The address “{slug}” is taken; choose another name or slug.", field="slug") from None
    return workspace


def membership_add(*, workspace: Workspace, actor: Membership, identifier: str, role: str) -> Membership:
    check_role(actor, Role.ADMIN)
    _check_may_grant(actor, role)
    identifier = identifier.strip()
    user = User.objects.filter(Q(username__iexact=identifier) | Q(email__iexact=identifier), is_active=True).first() if identifier else None
    if user is None:
        raise ApplicationError(f"No user with the username or e-mail “{identifier}”.", field="identifier")
    with transaction.atomic():
        if Membership.objects.filter(workspace=workspace, user=user).exists():
            raise ApplicationError(f"{user.username} is already a member of {workspace.name}.", field="identifier")
        membership = Membership.objects.create(workspace=workspace, user=user, role=role)
        audit_event_record(workspace=workspace, actor=actor.user, action="member.add", data={"user": user.username, "role": role})
    return membership


def membership_change_role(*, workspace: Workspace, actor: Membership, membership_id, role: str) -> Membership:
    check_role(actor, Role.ADMIN)
    _check_may_grant(actor, role)
    with transaction.atomic():
        target = _locked_member(workspace, membership_id)
        _check_may_manage(actor, target)
        if target.role == Role.OWNER and role != Role.OWNER:
            _check_not_last_owner(workspace, "demote")
        old = target.role
        target.role = role
        target.save(update_fields=["role"])
        audit_event_record(
            workspace=workspace, actor=actor.user, action="member.role", data={"user": target.user.username, "from": old, "to": role}
        )
    return target


def membership_remove(*, workspace: Workspace, actor: Membership, membership_id) -> None:
    check_role(actor, Role.ADMIN)
    with transaction.atomic():
        target = _locked_member(workspace, membership_id)
        _check_may_manage(actor, target)
        if target.role == Role.OWNER:
            _check_not_last_owner(workspace, "remove")
        target.delete()
        audit_event_record(
            workspace=workspace, actor=actor.user, action="member.remove", data={"user": target.user.username, "role": target.role}
        )


def _locked_member(workspace: Workspace, membership_id) -> Membership:
    from apps.core.tenancy import access

    # Lock every owner row too, so two concurrent demotions cannot both pass the last-owner check.
    list(Membership.objects.select_for_update().filter(workspace=workspace, role=Role.OWNER))
    return access(Membership, workspace, membership_id, Membership.objects.select_for_update().select_related("user"))


def _check_may_grant(actor: Membership, role: str) -> None:
    if role not in Role.values:
        raise ApplicationError(f"Unknown role “{role}”; choose one of {', '.join(Role.values)}.", field="role")
    if role == Role.OWNER and actor.role != Role.OWNER:
        raise ApplicationError("Only an owner can make someone an owner.", status=403, code="forbidden", field="role")


def _check_may_manage(actor: Membership, target: Membership) -> None:
    if target.role == Role.OWNER and actor.role != Role.OWNER:
        raise ApplicationError("Only an owner can change or remove an owner.", status=403, code="forbidden")


def _check_not_last_owner(workspace: Workspace, verb: str) -> None:
    if Membership.objects.filter(workspace=workspace, role=Role.OWNER).count() <= 1:
        raise ApplicationError(f"You cannot {verb} the last owner: make someone else an owner first.", code="last_owner")


def workspace_delete(*, workspace: Workspace, actor) -> None:
    """Remove a workspace and everything in it, its audit trail included.

    The audit table refuses DELETE; this transaction alone lifts that, for the
    rows of this workspace going with it (see audits migration 0002).
    """
    from django.db import connection

    from apps.documents.selectors import document_file_names

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('trustrag.allow_audit_purge', 'on', true)")
        files = document_file_names(workspace=workspace)
        workspace.delete()
        transaction.on_commit(lambda: _delete_files(files))


def _delete_files(names: list[str]) -> None:
    from django.core.files.storage import default_storage

    for name in names:
        default_storage.delete(name)


def settings_providers_update(
    *,
    workspace: Workspace,
    actor: Membership,
    provider_order: list[str],
    keys: dict[str, str],
    clear: set[str],
) -> WorkspaceSettings:
    """Set the order of LLM providers and the workspace's own keys. A key is stored encrypted
    and never shown again; the audit event says what changed, never the key."""
    check_role(actor, Role.ADMIN)
    order = _provider_order(provider_order)
    with transaction.atomic():
        options = WorkspaceSettings.objects.select_for_update().get(workspace=workspace)
        before = options.provider_order
        changed_keys = {}
        for name in CHAT_PROVIDERS:
            field = f"{name}_api_key_encrypted"
            if name in clear and getattr(options, field):
                setattr(options, field, "")
                changed_keys[name] = "cleared"
            elif keys.get(name, "").strip():
                setattr(options, field, encrypt(keys[name].strip()))
                changed_keys[name] = "set"
        options.provider_order = order
        options.save()
        data = {"provider_order": {"from": before or "server default", "to": order or "server default"}, "keys": changed_keys}
        audit_event_record(workspace=workspace, actor=actor.user, action="settings.providers", data=data)
    return options


def _provider_order(names: list[str]) -> str:
    names = [n.strip().lower() for n in names if n.strip()]
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise ApplicationError(f"Unknown provider “{unknown[0]}”; choose from {', '.join(PROVIDERS)}.", field="provider_order")
    if len(set(names)) != len(names):
        raise ApplicationError("Name each provider once.", field="provider_order")
    if "local" in names and names[-1] != "local":
        raise ApplicationError("The local provider always comes last: it is the fallback that never fails.", field="provider_order")
    return ",".join(n for n in names if n != "local")
