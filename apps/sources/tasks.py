from __future__ import annotations

from celery import shared_task

from apps.sources import importing, services
from apps.workspaces.models import Workspace


# The row holds the outcome (status, progress, message): no result is stored.
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def check_source(workspace_id: str, source_id: str) -> str:
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return "workspace gone"
    try:
        source = importing.source_run(workspace=workspace, source_id=source_id)
    except Exception as exc:
        services.source_mark_failed(workspace=workspace, source_id=source_id, message=f"The check failed ({exc.__class__.__name__}): {exc}")
        raise
    return "skipped" if source is None else source.status


@shared_task(ignore_result=True)
def check_due_sources() -> int:
    """The scheduler's turn: queue the sources whose schedule says they are due."""
    return services.sources_check_due()
