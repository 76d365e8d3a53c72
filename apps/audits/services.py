from __future__ import annotations

import hashlib
import json

from django.db import transaction

from apps.audits.models import AuditEvent, AuditRecord
from apps.workspaces.models import Workspace

GENESIS_HASH = "0" * 64


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
    return AuditEvent.objects.create(workspace=workspace, actor=actor, action=action, data=data)
