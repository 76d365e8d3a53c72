"""Handing work to the worker without ever losing the request that asked for it."""

from __future__ import annotations

import logging

from django.db import transaction

log = logging.getLogger(__name__)


def send_on_commit(task, *args: str | list[str]) -> None:
    """Queue `task(*args)` once the transaction commits. When the broker is down the row stays
    `queued` and a reaper sends it again later: the caller's answer (and its data) stand."""

    def send() -> None:
        try:
            task.delay(*args)
        # Broad on purpose: an unreachable broker surfaces as kombu's OperationalError, redis'
        # ConnectionError or Celery's RuntimeError from the result backend's reconnects.
        except Exception as exc:
            log.warning(
                "%s%r not queued, the broker is unreachable (%s: %s); the reaper will send it", task.name, args, exc.__class__.__name__, exc
            )

    transaction.on_commit(send)
