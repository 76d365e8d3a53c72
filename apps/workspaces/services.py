from __future__ import annotations

import math
from dataclasses import dataclass

from django.core.files.storage import default_storage
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.core.crypto import encrypt
from apps.core.errors import ApplicationError
from apps.core.events import event_record
from apps.core.guard import clean_text, kind_of, short
from apps.pipeline.parsing import installed_languages
from apps.pipeline.parsing.ocr import LANGUAGE
from apps.pipeline.providers import PROVIDERS
from apps.workspaces.models import Invitation, InvitationStatus, Membership, Role, Workspace, WorkspaceSettings
from apps.workspaces.signals import workspace_deleted
from apps.workspaces.tenancy import KeyMembership, access, access_invitation, person_identifiers, require

CHAT_PROVIDERS = ("groq", "zhipuai")


def workspace_create(*, owner, name: str, slug: str = "") -> Workspace:
    """A new workspace owned by `owner` (a user: nobody is a member yet, so no membership acts);
    its first event names the owner's new membership."""
    name = clean_text(name, field="name", max_length=120, one_line=True).strip()
    if not name:
        raise ApplicationError("Give the workspace a name.", field="name")
    slug = slugify(clean_text(slug, field="slug", max_length=60, one_line=True) or name)[:60]
    if not slug:
        raise ApplicationError("The name needs at least one letter or digit to make a URL from.", field="name")
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(name=name, slug=slug)
            WorkspaceSettings.objects.create(workspace=workspace)
            membership = Membership.objects.create(workspace=workspace, user=owner, role=Role.OWNER)
            event_record(workspace=workspace, actor=membership, action="workspace.create", data={"name": workspace.name, "slug": slug})
    except IntegrityError:
        raise ApplicationError(f"The address “{slug}” is taken; choose another name or slug.", field="slug") from None
    return workspace


def invitation_create(*, workspace: Workspace, actor: Membership | KeyMembership, identifier: str, role: str) -> Invitation:
    """Invite whoever holds the username or e-mail `identifier` to join as `role`.

    No account is looked up, so the answer is the same whether anyone holds the identifier or
    not: inviting cannot tell an admin who has an account. Only the names and addresses of
    members, which the admin already sees, are refused as already in."""
    require(actor, "manage_members", workspace=workspace)
    _check_may_grant(actor, role)
    identifier = _identifier(identifier)
    with transaction.atomic():
        if identifier in _member_identifiers(workspace):
            raise ApplicationError(f"“{short(identifier)}” is already a member of {workspace.name}.", field="identifier")
        try:
            with transaction.atomic():
                invitation = Invitation.objects.create(workspace=workspace, identifier=identifier, role=role, invited_by=actor.user)
        except IntegrityError:
            raise ApplicationError(
                f"“{short(identifier)}” is already invited: revoke that invitation to invite them with another role.", field="identifier"
            ) from None
        event_record(workspace=workspace, actor=actor, action="invitation.create", data={"identifier": identifier, "role": role})
    return invitation


def _identifier(value) -> str:
    # Case-folding can lengthen text (ß → ss), so the length is checked again on what is stored.
    folded = clean_text(value, field="identifier", max_length=254, one_line=True).strip().casefold()
    if not folded:
        raise ApplicationError("Give the username or e-mail of the person to invite.", field="identifier")
    return clean_text(folded, field="identifier", max_length=254)


def _member_identifiers(workspace: Workspace) -> set[str]:
    names = Membership.objects.filter(workspace=workspace).values_list("user__username", "user__email")
    return {value.casefold() for pair in names for value in pair if value}


def invitation_revoke(*, workspace: Workspace, actor: Membership | KeyMembership, invitation_id) -> Invitation:
    require(actor, "manage_members", workspace=workspace)
    with transaction.atomic():
        pending = Invitation.objects.select_for_update().filter(status=InvitationStatus.PENDING)
        invitation = access(Invitation, workspace, invitation_id, pending)
        if invitation.role == Role.OWNER and actor.role != Role.OWNER:
            raise ApplicationError("Only an owner can revoke an invitation to be an owner.", status=403, code="forbidden")
        _answer(invitation, InvitationStatus.REVOKED)
        event_record(workspace=workspace, actor=actor, action="invitation.revoke", data=_invitation_data(invitation))
    return invitation


def invitation_accept(*, user, invitation_id) -> Membership:
    """`user` joins the workspace of a pending invitation addressed to them, with its role; their
    other pending invitations to it (one by username, one by e-mail) are answered by this one."""
    with transaction.atomic():
        invitation = access_invitation(user, invitation_id, Invitation.objects.select_for_update(of=("self",)))
        workspace = invitation.workspace
        try:
            with transaction.atomic():
                membership = Membership.objects.create(workspace=workspace, user=user, role=invitation.role)
        except IntegrityError:
            raise ApplicationError(f"You are already a member of {workspace.name}.", code="already_member") from None
        siblings = Invitation.objects.filter(workspace=workspace, status=InvitationStatus.PENDING, identifier__in=person_identifiers(user))
        siblings.update(status=InvitationStatus.ACCEPTED, answered_at=timezone.now())
        event_record(workspace=workspace, actor=membership, action="invitation.accept", data=_invitation_data(invitation))
    return membership


def invitation_decline(*, user, invitation_id) -> Invitation:
    """`user` turns down an invitation addressed to them. The event names no one: whoever
    declines chose not to join, and naming their account would tell the workspace who holds
    the identifier."""
    with transaction.atomic():
        invitation = access_invitation(user, invitation_id, Invitation.objects.select_for_update(of=("self",)))
        _answer(invitation, InvitationStatus.DECLINED)
        event_record(workspace=invitation.workspace, actor=None, action="invitation.decline", data=_invitation_data(invitation))
    return invitation


def _answer(invitation: Invitation, status: str) -> None:
    invitation.status, invitation.answered_at = status, timezone.now()
    invitation.save(update_fields=["status", "answered_at"])


def _invitation_data(invitation: Invitation) -> dict:
    return {"identifier": invitation.identifier, "role": invitation.role}


def membership_leave(*, workspace: Workspace, actor: Membership | KeyMembership) -> None:
    """The person of `actor` leaves `workspace`; its last owner cannot, or nobody could manage it."""
    require(actor, "leave", workspace=workspace)
    if actor.user is None:
        raise ApplicationError("An API key is not a member: only a person can leave a workspace.", status=403, code="forbidden")
    with transaction.atomic():
        target = _locked_member(workspace, actor.pk)
        if target.role == Role.OWNER and Membership.objects.filter(workspace=workspace, role=Role.OWNER).count() <= 1:
            raise ApplicationError(
                f"You are the last owner of {workspace.name}: make someone else an owner before you leave.", code="last_owner"
            )
        target.delete()
        event_record(workspace=workspace, actor=target, action="member.leave", data={"user": target.user.username, "role": target.role})


def membership_change_role(*, workspace: Workspace, actor: Membership, membership_id, role: str) -> Membership:
    require(actor, "manage_members", workspace=workspace)
    _check_may_grant(actor, role)
    with transaction.atomic():
        target = _locked_member(workspace, membership_id)
        _check_may_manage(actor, target)
        if target.role == Role.OWNER and role != Role.OWNER:
            _check_not_last_owner(workspace, "demote")
        old = target.role
        target.role = role
        target.save(update_fields=["role"])
        event_record(workspace=workspace, actor=actor, action="member.role", data={"user": target.user.username, "from": old, "to": role})
    return target


def membership_remove(*, workspace: Workspace, actor: Membership, membership_id) -> None:
    require(actor, "manage_members", workspace=workspace)
    with transaction.atomic():
        target = _locked_member(workspace, membership_id)
        _check_may_manage(actor, target)
        if target.role == Role.OWNER:
            _check_not_last_owner(workspace, "remove")
        target.delete()
        event_record(workspace=workspace, actor=actor, action="member.remove", data={"user": target.user.username, "role": target.role})


def _locked_member(workspace: Workspace, membership_id) -> Membership:
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
    """Remove a workspace and everything in it, its audit trail and its stored files included.

    The audit table refuses DELETE; this transaction alone lifts that, for the
    rows of this workspace going with it (see audits migration 0002). Every file a workspace
    holds is stored under `workspaces/<id>/` (see documents.models), removed once committed; the
    apps drop what they keep for it outside its rows (`workspace_deleted`).
    """
    require(actor, "delete_workspace", workspace=workspace)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('trustrag.allow_audit_purge', 'on', true)")
        folder = f"workspaces/{workspace.pk}"
        workspace_id = workspace.pk
        workspace.delete()
        workspace_deleted.send(sender=Workspace, workspace_id=workspace_id)
        transaction.on_commit(lambda: _delete_folder(default_storage, folder))


def _delete_folder(storage, folder: str) -> None:
    if not storage.exists(folder):
        return
    folders, files = storage.listdir(folder)
    for name in files:
        storage.delete(f"{folder}/{name}")
    for name in folders:
        _delete_folder(storage, f"{folder}/{name}")


@dataclass(frozen=True)
class Setting:
    kind: type  # int, float, bool or str
    low: float | None
    high: float | None
    label: str
    help: str = ""


# Every pipeline setting the settings page (and the API's PATCH) may change, with its range.
# Provider order and keys have their own service (settings_providers_update).
SETTINGS: dict[str, Setting] = {
    "gate_threshold": Setting(
        float,
        0,
        1,
        "Gate threshold",
        "Verified mode refuses when the best passage's relevance or answerability (the judge's belief that it answers) is below this.",
    ),
    "crag_upper": Setting(float, 0, 1, "CRAG upper threshold", "Best passage at or above: retrieval is Correct."),
    "crag_lower": Setting(float, 0, 1, "CRAG lower threshold", "Best passage below: Incorrect; passages below it are dropped."),
    "strip_threshold": Setting(float, 0, 1, "Strip threshold", "Sentences scoring below it are stripped from kept passages."),
    "locator_threshold": Setting(float, 0, 100, "Quote locator threshold", "Fuzzy match score (0–100) at which a quote counts as found."),
    "judge_target_precision": Setting(
        float,
        0.5,
        0.99,
        "Judge target precision",
        "How often the local judge must be right to verify or flag a claim on its own; a claim it is less sure of is shown as "
        "not checked (read the quote), and with an LLM provider goes to the LLM.",
    ),
    "trust_weight_retrieval": Setting(float, 0, 1, "Weight of retrieval confidence"),
    "trust_weight_agreement": Setting(float, 0, 1, "Weight of source agreement"),
    "trust_weight_grounding": Setting(float, 0, 1, "Weight of grounding"),
    "risk_low_cutoff": Setting(float, 0, 1, "Low risk from", "Confidence at or above which risk is Low."),
    "risk_medium_cutoff": Setting(float, 0, 1, "Medium risk from", "Confidence at or above which risk is Medium (else High)."),
    "dense_k": Setting(int, 1, 200, "Dense candidates", "Passages taken from the embedding (cosine) leg."),
    "keyword_k": Setting(int, 1, 200, "Keyword candidates", "Passages taken from the BM25 keyword leg."),
    "rrf_k": Setting(int, 1, 1000, "RRF k", "Reciprocal rank fusion constant: higher flattens the ranks."),
    "dense_weight": Setting(float, 0, 10, "Dense leg weight"),
    "keyword_weight": Setting(float, 0, 10, "Keyword leg weight"),
    "rerank_top_n": Setting(int, 1, 50, "Passages after reranking", "How many reranked passages go on to the answer."),
    "answer_max_claims": Setting(int, 1, 20, "Claims per answer at most"),
    "web_search_enabled": Setting(bool, None, None, "Web search", "Ask Tavily when retrieval is not Correct (needs TAVILY_API_KEY)."),
    "web_results": Setting(int, 1, 20, "Web results", "Results asked of the web search."),
    "chunk_size": Setting(int, 100, 8000, "Chunk size", "Characters per passage when documents are indexed."),
    "chunk_overlap": Setting(int, 0, 4000, "Chunk overlap", "Characters a passage repeats from the one before it."),
    "ocr_language": Setting(
        str,
        None,
        None,
        "OCR language",
        "Tesseract's language of scanned PDF pages: eng, deu, fra…, or several as deu+eng. Re-index a document to read it again.",
    ),
    "max_document_chunks": Setting(
        int,
        1,
        100_000,
        "Passages per document at most",
        "A document that would make more passages fails with a message, before it is embedded; raise this to index it.",
    ),
    "max_sheet_cells": Setting(
        int,
        1,
        20_000_000,
        "Spreadsheet cells per document at most",
        "Cells read from one spreadsheet (XLSX, CSV), empty ones included; a larger one fails with a message.",
    ),
}
CHUNKING = ("chunk_size", "chunk_overlap")


def settings_update(*, workspace: Workspace, actor: Membership, changes: dict) -> WorkspaceSettings:
    """Change some of the workspace's pipeline settings (names of SETTINGS → new values).

    Every value is checked — its type, its range, and the rules between values (lower ≤
    upper, weights not all zero, overlap < size) — before anything is saved; the first
    problem raises ApplicationError naming its field. Values equal to the current ones are
    no change. What did change is audited, from → to, in the same transaction; a chunking
    change marks the documents as needing a re-index.
    """
    require(actor, "manage_settings", workspace=workspace)
    values = {name: _setting_value(name, value) for name, value in changes.items()}
    with transaction.atomic():
        options = WorkspaceSettings.objects.select_for_update().get(workspace=workspace)
        changed = {name: {"from": getattr(options, name), "to": value} for name, value in values.items() if getattr(options, name) != value}
        for name, change in changed.items():
            setattr(options, name, change["to"])
        _check_settings(options, changed)
        if changed:
            options.save(update_fields=[*changed, "updated_at"])
            data = {"changes": changed, "reindex_needed": any(name in changed for name in CHUNKING)}
            event_record(workspace=workspace, actor=actor, action="settings.update", data=data)
    return options


def _setting_value(name: str, value):
    setting = SETTINGS.get(name)
    if setting is None:
        raise ApplicationError(f"“{short(str(name))}” is not a setting that can be changed here.", field=short(str(name)))
    if setting.kind is bool:
        if not isinstance(value, bool):
            raise ApplicationError(f"{setting.label} must be on or off (true or false).", field=name)
        return value
    if setting.kind is str:
        if not isinstance(value, str):
            raise ApplicationError(f"{setting.label} must be text, not {kind_of(value)}.", field=name)
        return _ocr_language(value, setting.label, name)
    kind = "a whole number" if setting.kind is int else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ApplicationError(f"{setting.label} must be {kind}, not {kind_of(value)}.", field=name)
    number = _number(value, setting.kind)
    if number is None:
        raise ApplicationError(f"{setting.label} must be {kind}.", field=name)
    if not setting.low <= number <= setting.high:
        shown = f"{number:g}" if abs(number) < 1e15 else "it"
        raise ApplicationError(f"{setting.label} must be between {setting.low:g} and {setting.high:g}; {shown} is not.", field=name)
    return number


def _ocr_language(value: str, label: str, name: str) -> str:
    """Tesseract's codes joined by "+"; when this server has Tesseract, only languages it has."""
    code = clean_text(value, field=name).strip()
    if not LANGUAGE.fullmatch(code) or len(code) > 60:
        raise ApplicationError(f"{label} must be Tesseract language codes such as “eng” or “deu+eng”, not “{short(code)}”.", field=name)
    installed = installed_languages()
    missing = sorted(set(code.split("+")) - installed) if installed is not None else []
    if missing:
        raise ApplicationError(
            f"{label}: this server's Tesseract has no “{'”, “'.join(missing)}”; it has {', '.join(sorted(installed)) or 'none'}.",
            field=name,
        )
    return code


def _number(value: int | float, kind: type):
    """A number as the setting's kind: an int (from a whole float too) or a finite float; None
    when it cannot be one. Text is not read as a number here: the page's form parses its text."""
    if kind is int:
        return value if isinstance(value, int) else (int(value) if math.isfinite(value) and value.is_integer() else None)
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def _check_settings(options: WorkspaceSettings, changed: dict) -> None:
    """The rules between settings, on the values they would have together."""

    def blame(*names: str) -> str:  # the field the person just changed, if any
        return next((n for n in names if n in changed), names[0])

    if options.crag_lower > options.crag_upper:
        raise ApplicationError(
            f"The CRAG lower threshold ({options.crag_lower:g}) must not be above the upper one ({options.crag_upper:g}).",
            field=blame("crag_lower", "crag_upper"),
        )
    if options.risk_medium_cutoff > options.risk_low_cutoff:
        raise ApplicationError(
            f"Medium risk must start at or below where Low risk starts ({options.risk_medium_cutoff:g} > {options.risk_low_cutoff:g}).",
            field=blame("risk_medium_cutoff", "risk_low_cutoff"),
        )
    weights = ("trust_weight_retrieval", "trust_weight_agreement", "trust_weight_grounding")
    if not any(getattr(options, name) > 0 for name in weights):
        raise ApplicationError("At least one trust weight must be above 0: the confidence is their weighted mean.", field=blame(*weights))
    if options.dense_weight <= 0 and options.keyword_weight <= 0:
        raise ApplicationError("At least one retrieval leg needs a weight above 0.", field=blame("dense_weight", "keyword_weight"))
    if options.chunk_overlap >= options.chunk_size:
        raise ApplicationError(
            f"The chunk overlap ({options.chunk_overlap}) must be smaller than the chunk size ({options.chunk_size}).",
            field=blame("chunk_overlap", "chunk_size"),
        )


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
    require(actor, "manage_settings", workspace=workspace)
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
        event_record(workspace=workspace, actor=actor, action="settings.providers", data=data)
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
