from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from apps.audits.models import AuditRecord
from apps.queries.models import QueryRun
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access


def query_run_list(*, workspace: Workspace, include_evaluation: bool = False) -> QuerySet[QueryRun]:
    """The workspace's runs, each with `audit_record_id` (its answer's audit record, or None)
    read in the same query."""
    runs = _with_audit_record_id(QueryRun.objects.filter(workspace=workspace).select_related("asked_by"))
    return runs if include_evaluation else runs.filter(evaluation=False)


def access_query_run(workspace: Workspace, run_id) -> QueryRun:
    return access(QueryRun, workspace, run_id, _with_audit_record_id(QueryRun.objects.select_related("asked_by")))


def _with_audit_record_id(runs: QuerySet[QueryRun]) -> QuerySet[QueryRun]:
    records = AuditRecord.objects.filter(workspace_id=OuterRef("workspace_id"), query_run_id=OuterRef("pk")).values("pk")[:1]
    return runs.annotate(audit_record_id=Subquery(records))
