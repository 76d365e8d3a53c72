"""The audit trail is append-only in the database and its hash chain shows any tampering."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.utils import DatabaseError

from apps.audits.models import AuditRecord
from apps.audits.selectors import audit_chain_check
from apps.audits.services import GENESIS_HASH
from tests.conftest import ROOT, worker_env
from tests.factories import AuditRecordFactory


def append(workspace, n: int) -> list[AuditRecord]:
    return [AuditRecordFactory(workspace=workspace, actor_label="test", payload={"question": f"q{i}"}) for i in range(n)]


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


def verify(*args) -> tuple[str, CommandError | None]:
    out = StringIO()
    try:
        call_command("audit_verify", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def test_audit_verify_reports_every_chain_that_holds(personas):
    append(personas.workspace_a, 3)
    append(personas.workspace_b, 1)
    out, error = verify()
    assert error is None
    assert "acme: 3 record(s), the chain holds." in out
    assert "beta: 1 record(s), the chain holds." in out


def test_audit_verify_names_the_first_altered_record_and_fails(personas):
    records = append(personas.workspace_a, 4)
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")  # the trigger's back, as a superuser could
        cursor.execute("""UPDATE audits_auditrecord SET payload = '{"question": "forged"}' WHERE id = %s""", [records[2].pk])
        cursor.execute("SET session_replication_role = origin")
    out, error = verify("--workspace", "acme")
    assert "acme: broken at record #3: its content no longer matches its hash: the record was altered." in out
    assert error is not None
    assert "broken in 1 workspace(s): acme" in str(error)


def test_audit_verify_finds_a_record_removed_from_the_middle(personas):
    records = append(personas.workspace_a, 3)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('trustrag.allow_audit_purge', 'on', true)")
        cursor.execute("DELETE FROM audits_auditrecord WHERE id = %s", [records[1].pk])
    out, error = verify("--workspace", "acme")
    assert "acme: broken at record #3: sequence 3 where 2 was expected: a record is missing or was inserted." in out
    assert error is not None


@pytest.mark.django_db(transaction=True)
def test_audit_verify_exits_non_zero_from_the_shell_when_the_chain_is_broken(personas):
    """The exit code is what a cron job or a CI step sees."""
    records = append(personas.workspace_a, 2)
    command = [sys.executable, "manage.py", "audit_verify", "--workspace", "acme"]
    holds = subprocess.run(command, cwd=ROOT, env=worker_env(), capture_output=True, text=True, timeout=120)
    assert holds.returncode == 0, holds.stderr
    assert "acme: 2 record(s), the chain holds." in holds.stdout
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute("UPDATE audits_auditrecord SET actor_label = 'someone else' WHERE id = %s", [records[0].pk])
        cursor.execute("SET session_replication_role = origin")
    broken = subprocess.run(command, cwd=ROOT, env=worker_env(), capture_output=True, text=True, timeout=120)
    assert broken.returncode == 1
    assert "acme: broken at record #1" in broken.stdout
    assert "The audit chain is broken in 1 workspace(s): acme." in broken.stderr


def test_audit_verify_names_an_unknown_workspace(db):
    _, error = verify("--workspace", "nowhere")
    assert "No workspace with the slug “nowhere”." in str(error)
