from __future__ import annotations

from django.db.models import QuerySet

from apps.core.tenancy import access
from apps.queries.models import QueryRun
from apps.workspaces.models import Workspace


def query_run_list(*, workspace: Workspace) -> QuerySet[QueryRun]:
    return QueryRun.objects.filter(workspace=workspace).select_related("asked_by")


def access_query_run(workspace: Workspace, run_id) -> QueryRun:
    return access(QueryRun, workspace, run_id, QueryRun.objects.select_related("asked_by"))
