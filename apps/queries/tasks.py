from __future__ import annotations

from celery import shared_task

from apps.queries import services
from apps.workspaces.models import Workspace


# Fire and forget: the row holds the outcome, so no result is stored or subscribed to
# (which also keeps a publish during a Redis outage quick to fail).
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_query(workspace_id: str, run_id: str) -> str:
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return "workspace gone"
    run = services.query_run_execute(workspace=workspace, run_id=run_id)
    return "skipped" if run is None else run.status


@shared_task(ignore_result=True)
def reap_queued_queries() -> dict[str, int]:
    return services.query_runs_reap_queued()
