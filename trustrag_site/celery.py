from __future__ import annotations

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trustrag_site.settings")

app = Celery("trustrag")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _size_torch(**_):
    # Before any task runs: torch's threads for this worker process (apps/core/serving.py).
    import torch

    from apps.core.serving import configured_worker_torch_threads

    torch.set_num_threads(configured_worker_torch_threads())


@worker_ready.connect
def _warm_up(**_):
    # Load the embedding model and start the parser processes while the worker waits for its
    # first task.
    import threading

    from django.conf import settings

    from apps.pipeline.embedding import get_embedder
    from apps.pipeline.parsing import offload

    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    threading.Thread(target=lambda: embedder.model, name="embedder-warmup", daemon=True).start()
    threading.Thread(target=offload.warm, args=(settings.PARSER_PROCESSES,), name="parsers-warmup", daemon=True).start()


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(task=None, **_):
    # A task's connection lives as a request's does (settings.CELERY_DB_REUSE_MAX): closed here
    # once older than CONN_MAX_AGE or unusable after an error, checked before its next use. An
    # eager task runs inside its caller's transaction, whose connection is the caller's to close.
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
