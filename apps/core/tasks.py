from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.pipeline.embedding import get_embedder


@shared_task
def warm_up() -> int:
    """Load the embedding model in this worker process (returns its dimension), so that
    a measurement taken next does not include the model's load time."""
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    return int(embedder.embed(["warm up"]).shape[1])


@shared_task
def purge_idempotency_records() -> int:
    from apps.core.idempotency import idempotency_purge

    return idempotency_purge()
