from __future__ import annotations

from collections import Counter

from django.core.management.base import BaseCommand

from apps.documents.selectors import documents_embedded_otherwise
from apps.documents.services import document_reindex
from apps.pipeline.embedding import product_embedder


class Command(BaseCommand):
    help = (
        "After EMBEDDING_BACKEND or EMBEDDING_MODEL changed: say which documents hold vectors of another embedder, per "
        "workspace, and (without --check) queue them for the worker to index again, so no index mixes two embedders."
    )

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="only say what would be re-embedded")

    def handle(self, *args, check: bool, **options):
        identity = product_embedder().identity
        stale = list(documents_embedded_otherwise())
        if not stale:
            self.stdout.write(f"Every indexed document holds vectors of {identity}: nothing to re-embed.")
            return
        by_workspace = Counter(d.workspace for d in stale)
        for workspace, count in sorted(by_workspace.items(), key=lambda item: item[0].slug):
            embedders = sorted({d.indexed_embedder or "fp32, before it was recorded" for d in stale if d.workspace == workspace})
            self.stdout.write(f"{workspace.slug}: {count} document(s) embedded with {', '.join(embedders)}")
        if check:
            self.stdout.write(f"{len(stale)} document(s) to re-embed with {identity}; run without --check to queue them.")
            return
        queued = 0
        for document in stale:
            queued += document_reindex(workspace=document.workspace, actor=None, document_id=document.pk)
        self.stdout.write(f"{queued} document(s) queued to be embedded again with {identity}.")
