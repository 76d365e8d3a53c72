from __future__ import annotations

from django.db import migrations

# The audit trail is append-only in the database itself, not only in the code:
# UPDATE and DELETE raise. Removing a whole workspace (its records go with it)
# is the one exception, allowed only inside a transaction that sets
# trustrag.allow_audit_purge = 'on' (see workspace deletion).
FORWARD = """
CREATE FUNCTION audits_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('trustrag.allow_audit_purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit records are append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER auditrecord_append_only BEFORE UPDATE OR DELETE ON audits_auditrecord
    FOR EACH ROW EXECUTE FUNCTION audits_refuse_change();
"""
BACKWARD = """
DROP TRIGGER IF EXISTS auditrecord_append_only ON audits_auditrecord;
DROP FUNCTION IF EXISTS audits_refuse_change();
"""


class Migration(migrations.Migration):
    dependencies = [("audits", "0001_initial")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
