from __future__ import annotations

import time
import uuid
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from apps.core.errors import ApplicationError
from apps.documents.models import Document, DocumentStatus
from apps.documents.services import document_create, documents_enqueue_batch, documents_ingest_many
from apps.pipeline.parsing import SUPPORTED_EXTENSIONS
from apps.workspaces.models import Workspace


class Command(BaseCommand):
    help = (
        "Ingest files, or every supported file under folders, into a workspace: here in this process as one embedding "
        "stream (each document searchable as soon as its own chunks are written), or by the worker with --queue."
    )

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="the workspace's slug")
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument(
            "--queue", action="store_true", help="hand the files to the Celery worker (one batch) instead of ingesting here"
        )

    def handle(self, *args, workspace: str, paths: list[Path], queue: bool, **options):
        target = Workspace.objects.filter(slug=workspace).first()
        if target is None:
            raise CommandError(f"No workspace with the slug “{workspace}”.")
        files = _collect(paths)
        if not files:
            raise CommandError(f"No {', '.join(SUPPORTED_EXTENSIONS)} files under {', '.join(map(str, paths))}.")
        self.failures, self.chunks = 0, 0
        self.batch, self.paths = uuid.uuid4(), {}
        started = time.perf_counter()
        # One bar for the whole run: files settled (ready, failed, refused or already here), the
        # chunks indexed so far, and the time left at the pace so far (tqdm's).
        with tqdm(total=len(files), unit="file", desc="ingest", file=self.stderr._out) as self.bar:
            if queue:
                added = list(self._created(target, files, queued=True))
                if added:
                    documents_enqueue_batch(workspace=target, document_ids=added)
            else:
                documents_ingest_many(workspace=target, document_ids=self._created(target, files), on_settled=self._settled)
        seconds = time.perf_counter() - started
        if not queue:
            self.stdout.write(f"{len(files)} file(s), {self.chunks:,} chunk(s) indexed in {seconds:.1f} s.")
        if self.failures:
            raise CommandError(f"{self.failures} of {len(files)} file(s) did not go in; see above.")

    def _created(self, workspace: Workspace, files: list[Path], *, queued: bool = False):
        """The new documents' ids, stored one by one as the ingestion asks for the next (so the
        first is indexed while the last is still being read from disk)."""
        for path in files:
            try:
                document, created = document_create(
                    workspace=workspace, actor=None, filename=path.name, data=path.read_bytes(), enqueue=False, batch=self.batch
                )
            except ApplicationError as exc:
                self._report(path, f"refused: {exc.message}", failed=True)
                continue
            if not created:
                self._report(path, f"already here as “{document.filename}” ({document.status})")
                continue
            self.paths[document.pk] = path
            if queued:
                self._report(path, "queued for the worker")
            yield document.pk

    def _settled(self, document: Document) -> None:
        path = self.paths.get(document.pk, document.filename)
        if document.status == DocumentStatus.FAILED:
            self._report(path, f"failed: {document.error}", failed=True)
            return
        self.chunks += document.chunk_count
        self._report(path, f"ready: {document.contents or f'{document.page_count} page(s)'}, {document.chunk_count} chunk(s)")

    def _report(self, path, outcome: str, *, failed: bool = False) -> None:
        self.failures += failed
        self.bar.update(1)
        self.bar.set_postfix_str(f"{self.chunks:,} chunks")
        tqdm.write(f"{path}: {outcome}", file=self.stdout._out)


def _collect(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS))
        elif path.is_file():
            found.append(path)
        else:
            raise CommandError(f"{path} does not exist.")
    return found
