"""Gunicorn settings shared by `make run`, `make load` and the Docker image: the processes and
threads of the measured plan (apps/core/serving.py; WEB_WORKERS / WEB_THREADS /
WEB_TORCH_THREADS set them), and each process's embedding model loaded as it starts."""

from __future__ import annotations

import os
import threading

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trustrag_site.settings")

from apps.core.serving import configured_web_plan

_plan = configured_web_plan()
workers = _plan.workers
threads = _plan.threads


def post_worker_init(worker):
    # torch's threads for this process, then the embedding model loaded in the background as soon
    # as the process starts, so the first question does not pay the ~10 s model load.
    import torch
    from django.conf import settings

    from apps.pipeline.embedding import get_embedder

    torch.set_num_threads(_plan.torch_threads)
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    threading.Thread(target=lambda: embedder.model, name="embedder-warmup", daemon=True).start()


control_socket_disable = True  # no ~/.gunicorn socket shared between instances
