from __future__ import annotations

from celery import shared_task

from apps.queries import services
from apps.workspaces.models import Workspace


@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_query(workspace_id: str, run_id: str) -> str:
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return "workspace gone"
    run = services.query_run_execute(workspace=workspace, run_id=run_id)
    return "skipped" if run is None else run.status
