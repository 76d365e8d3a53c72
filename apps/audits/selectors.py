from __future__ import annotations

from dataclasses import dataclass

from apps.audits.models import AuditRecord
from apps.audits.services import GENESIS_HASH, record_hash
from apps.workspaces.models import Workspace


def audit_record_for_run(*, workspace: Workspace, query_run_id) -> AuditRecord | None:
    return AuditRecord.objects.filter(workspace=workspace, query_run_id=query_run_id).first()


@dataclass(frozen=True)
class ChainCheck:
    records: int
    intact: bool
    first_broken_sequence: int | None


def audit_chain_check(*, workspace: Workspace) -> ChainCheck:
    """Recompute every hash of the workspace's chain in order."""
    prev_hash = GENESIS_HASH
    count = 0
    for record in AuditRecord.objects.filter(workspace=workspace).order_by("sequence").iterator():
        count += 1
        expected = record_hash(
            prev_hash=prev_hash,
            sequence=record.sequence,
            workspace_id=workspace.pk,
            query_run_id=record.query_run_id,
            actor_label=record.actor_label,
            payload=record.payload,
        )
        if record.prev_hash != prev_hash or record.hash != expected or record.sequence != count:
            return ChainCheck(count, False, record.sequence)
        prev_hash = record.hash
    return ChainCheck(count, True, None)
