"""The audit trail is append-only in the database and its hash chain shows any tampering."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection, transaction
from django.db.utils import DatabaseError

from apps.audits.models import AuditRecord
from apps.audits.selectors import audit_chain_check
from apps.audits.services import GENESIS_HASH, audit_record_create


def append(workspace, n: int) -> list[AuditRecord]:
    return [
        audit_record_create(workspace=workspace, actor=None, actor_label="test", query_run_id=uuid.uuid4(), payload={"question": f"q{i}"})
        for i in range(n)
    ]


def test_records_are_chained_per_workspace(personas):
    records = append(personas.workspace_a, 3)
    other = append(personas.workspace_b, 1)[0]
    assert [r.sequence for r in records] == [1, 2, 3]
    assert records[0].prev_hash == GENESIS_HASH
    assert records[1].prev_hash == records[0].hash
    assert records[2].prev_hash == records[1].hash
    assert other.sequence == 1
    assert other.prev_hash == GENESIS_HASH
    assert audit_chain_check(workspace=personas.workspace_a).intact


def test_the_database_refuses_to_update_an_audit_record(personas):
    record = append(personas.workspace_a, 1)[0]
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditRecord.objects.filter(pk=record.pk).update(actor_label="someone else")
    assert AuditRecord.objects.get(pk=record.pk).actor_label == "test"


def test_the_database_refuses_to_delete_an_audit_record(personas):
    record = append(personas.workspace_a, 1)[0]
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditRecord.objects.filter(pk=record.pk).delete()
    assert AuditRecord.objects.filter(pk=record.pk).exists()


def test_tampering_behind_the_triggers_back_is_caught_by_the_chain_check(personas):
    records = append(personas.workspace_a, 3)
    with connection.cursor() as cursor:
        # A superuser can switch triggers off for its session; the chain still tells.
        cursor.execute("SET session_replication_role = replica")
        cursor.execute('UPDATE audits_auditrecord SET payload = \'{"question": "forged"}\' WHERE id = %s', [records[1].pk])
        cursor.execute("SET session_replication_role = origin")
    check = audit_chain_check(workspace=personas.workspace_a)
    assert not check.intact
    assert check.first_broken_sequence == 2
