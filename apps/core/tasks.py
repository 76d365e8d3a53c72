from __future__ import annotations

from celery import shared_task


@shared_task
def purge_idempotency_records() -> int:
    from apps.core.idempotency import idempotency_purge

    return idempotency_purge()
