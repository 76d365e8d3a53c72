from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from apps.pipeline.embedding import product_embedder


class Command(BaseCommand):
    help = (
        "Load the product's embedder, exporting its ONNX graph from the shipped weights if this machine has none yet "
        "(EMBEDDING_BACKEND onnx or onnx-int8; cached under VAR_DIR/models/). `manage.py serve` runs it before the "
        "worker and the web server start, so neither the first upload nor the first question waits for the export."
    )

    def handle(self, *args, **options):
        embedder = product_embedder()
        embedder.embed(["ready"])
        where = f" ({embedder.export_dir})" if settings.EMBEDDING_BACKEND != "torch" else ""
        self.stdout.write(f"Embedder ready: {settings.EMBEDDING_BACKEND}, {embedder.identity}{where}")
