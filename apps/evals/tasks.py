from __future__ import annotations

from celery import shared_task

from apps.evals import services
from apps.workspaces.models import Workspace


@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_evaluation(workspace_id: str, run_id: str) -> str:
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return "workspace gone"
    try:
        run = services.eval_run_execute(workspace=workspace, run_id=run_id)
    except Exception as exc:
        message = f"The evaluation stopped ({exc.__class__.__name__}): {exc}. Start it again from its set."
        services.eval_run_mark_failed(workspace=workspace, run_id=run_id, message=message)
        raise
    return "skipped" if run is None else run.status
