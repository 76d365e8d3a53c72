from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import transaction

from apps.audits.models import AuditEvent, AuditRecord
from apps.workspaces.models import Workspace

GENESIS_HASH = "0" * 64

# Who acts when it is not a person: the API sets this to a key's label for the length of a
# request made with a workspace API key, so that every admin action recorded meanwhile — by
# any service, present or future — names the key without each one passing it along.
_acting_label: ContextVar[str] = ContextVar("audit_acting_label", default="")


@contextmanager
def audit_acting_as(label: str):
    token = _acting_label.set(label)
    try:
        yield
    finally:
        _acting_label.reset(token)


def record_hash(*, prev_hash: str, sequence: int, workspace_id, query_run_id, actor_label: str, payload: dict) -> str:
    body = json.dumps(
        {
            "prev_hash": prev_hash,
            "sequence": sequence,
            "workspace": str(workspace_id),
            "query_run": str(query_run_id),
            "actor": actor_label,
            "payload": payload,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def audit_record_create(*, workspace: Workspace, actor, actor_label: str, query_run_id, payload: dict) -> AuditRecord:
    """Append one record to the workspace's hash chain.

    The workspace row is locked so concurrent answers in one workspace append
    one after another and the chain never forks.
    """
    payload = json.loads(json.dumps(payload, default=str))  # exactly what jsonb will give back
    with transaction.atomic():
        Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
        last = AuditRecord.objects.filter(workspace=workspace).order_by("-sequence").values("sequence", "hash").first()
        sequence = 1 if last is None else last["sequence"] + 1
        prev_hash = GENESIS_HASH if last is None else last["hash"]
        fields = {"sequence": sequence, "query_run_id": query_run_id, "actor_label": actor_label, "payload": payload}
        digest = record_hash(prev_hash=prev_hash, workspace_id=workspace.pk, **fields)
        return AuditRecord.objects.create(workspace=workspace, actor=actor, prev_hash=prev_hash, hash=digest, **fields)


def audit_event_record(*, workspace: Workspace, actor, action: str, data: dict) -> AuditEvent:
    """One admin action. Done through an API key, `data["actor_label"]` names the key
    (`key:<prefix> (<name>)`) and `actor` is None."""
    label = _acting_label.get()
    if label:
        data = {**data, "actor_label": label}
    return AuditEvent.objects.create(workspace=workspace, actor=actor, action=action, data=data)
