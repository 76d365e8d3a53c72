"""Gunicorn settings shared by `make run` and the Docker image."""

from __future__ import annotations

import threading


def post_worker_init(worker):
    # Load the embedding model in the background as soon as a worker starts,
    # so the first question does not pay the ~10 s model load.
    from django.conf import settings

    from apps.pipeline.embedding import get_embedder

    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    threading.Thread(target=lambda: embedder.model, name="embedder-warmup", daemon=True).start()


control_socket_disable = True  # no ~/.gunicorn socket shared between instances
