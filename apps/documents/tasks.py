from __future__ import annotations

from celery import shared_task

from apps.documents import services
from apps.pipeline.embedding import product_embedder
from apps.workspaces.models import Workspace


# Fire and forget: the row holds the outcome, so no result is stored or subscribed to
# (which also keeps a publish during a Redis outage quick to fail).
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def ingest_document(workspace_id: str, document_id: str) -> str:
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return "workspace gone"
    try:
        document = services.document_ingest(workspace=workspace, document_id=document_id)
    except Exception as exc:
        services.document_mark_failed(
            workspace=workspace, document_id=document_id, message=f"Ingestion failed ({exc.__class__.__name__}): {exc}"
        )
        raise
    return "skipped" if document is None else document.status


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def ingest_documents(workspace_id: str, document_ids: list[str]) -> str:
    """Files uploaded together, ingested as one embedding stream (documents_ingest_many)."""
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return "workspace gone"
    try:
        settled = services.documents_ingest_many(workspace=workspace, document_ids=document_ids)
    except Exception as exc:
        services.documents_ingest_interrupted(
            workspace=workspace, document_ids=document_ids, message=f"Ingestion failed ({exc.__class__.__name__}): {exc}"
        )
        raise
    return f"{len(settled)} of {len(document_ids)} settled"


@shared_task(ignore_result=True)
def reap_stuck_documents() -> dict[str, int]:
    return services.documents_reap_stuck()


@shared_task
def warm_up() -> int:
    """Load the embedding model in this worker process (returns its dimension), so that
    a measurement taken next does not include the model's load time."""
    embedder = product_embedder()
    return int(embedder.embed(["warm up"]).shape[1])
