from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet

from apps.core.crypto import decrypt
from apps.pipeline.providers import ProviderSpec
from apps.workspaces.models import Invitation, InvitationStatus, Membership, Workspace, WorkspaceSettings
from apps.workspaces.tenancy import access, person_identifiers


def membership_list_for_user(*, user) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("workspace").order_by("workspace__name")


def membership_list(*, workspace: Workspace) -> QuerySet[Membership]:
    return Membership.objects.filter(workspace=workspace).select_related("user").order_by("user__username")


def membership_get(*, workspace: Workspace, membership_id) -> Membership:
    return access(Membership, workspace, membership_id, membership_list(workspace=workspace))


def invitation_get(*, workspace: Workspace, invitation_id) -> Invitation:
    return access(Invitation, workspace, invitation_id, invitation_list(workspace=workspace))


def invitation_list(*, workspace: Workspace) -> QuerySet[Invitation]:
    """The workspace's pending invitations, newest first (answered ones are in the audit trail)."""
    pending = Invitation.objects.filter(workspace=workspace, status=InvitationStatus.PENDING)
    return pending.select_related("invited_by").order_by("-created_at", "identifier")


def invitation_list_for_user(*, user) -> QuerySet[Invitation]:
    """The pending invitations addressed to `user`'s username or e-mail, in every workspace."""
    pending = Invitation.objects.filter(status=InvitationStatus.PENDING, identifier__in=person_identifiers(user))
    return pending.select_related("workspace", "invited_by").order_by("-created_at", "pk")


def settings_get(*, workspace: Workspace) -> WorkspaceSettings:
    found, _ = WorkspaceSettings.objects.get_or_create(workspace=workspace)
    return found


def provider_specs_get(*, options: WorkspaceSettings) -> list[ProviderSpec]:
    """The providers to try, in order, with the key each would use: the workspace's own key
    when it has one (cost attribution), else the server's. Local is always last."""
    servers = {
        "groq": (settings.GROQ_API_KEY, settings.GROQ_BASE_URL, settings.GROQ_MODEL),
        "zhipuai": (settings.ZHIPUAI_API_KEY, settings.ZHIPUAI_BASE_URL, settings.ZHIPUAI_MODEL),
    }
    own = {"groq": decrypt(options.groq_api_key_encrypted), "zhipuai": decrypt(options.zhipuai_api_key_encrypted)}
    if options.provider_order:
        order = [name for name in options.provider_order.split(",") if name in servers]
    else:
        order = [name for name in servers if servers[name][0] or own[name]]
    specs = []
    for name in order:
        server_key, base_url, model = servers[name]
        key, source = (own[name], "workspace") if own[name] else (server_key, "server" if server_key else "")
        specs.append(ProviderSpec(name=name, model=model, api_key=key, base_url=base_url, key_source=source))
    return [*specs, ProviderSpec(name="local", model="extractive")]


def provider_secrets(*, options: WorkspaceSettings) -> list[str]:
    """Every key a call could carry, so that error messages can be scrubbed of them."""
    keys = [settings.GROQ_API_KEY, settings.ZHIPUAI_API_KEY, settings.TAVILY_API_KEY]
    return [k for k in [*keys, decrypt(options.groq_api_key_encrypted), decrypt(options.zhipuai_api_key_encrypted)] if k]
