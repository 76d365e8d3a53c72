from __future__ import annotations

from celery import shared_task


@shared_task
def purge_idempotency_records() -> int:
    """Hourly (the scheduler): forget the first responses older than a day."""
    from apps.workspaces.idempotency import idempotency_purge

    return idempotency_purge()
