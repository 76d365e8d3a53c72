from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from apps.core.errors import ApplicationError
from apps.documents.models import DocumentStatus
from apps.documents.services import document_create, document_ingest
from apps.pipeline.parsing import SUPPORTED_EXTENSIONS
from apps.workspaces.models import Workspace


class Command(BaseCommand):
    help = "Ingest files, or every supported file under folders, into a workspace, here in this process."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="the workspace's slug")
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--queue", action="store_true", help="hand the files to the Celery worker instead of ingesting here")

    def handle(self, *args, workspace: str, paths: list[Path], queue: bool, **options):
        target = Workspace.objects.filter(slug=workspace).first()
        if target is None:
            raise CommandError(f"No workspace with the slug “{workspace}”.")
        files = _collect(paths)
        if not files:
            raise CommandError(f"No {', '.join(SUPPORTED_EXTENSIONS)} files under {', '.join(map(str, paths))}.")
        failures = 0
        with tqdm(files, unit="file", desc="ingest", file=self.stderr._out) as bar:
            for path in bar:
                bar.set_postfix_str(path.name[:40])
                outcome = self._one(target, path, queue)
                failures += outcome.startswith("failed") or outcome.startswith("refused")
                tqdm.write(f"{path}: {outcome}", file=self.stdout._out)
        if failures:
            raise CommandError(f"{failures} of {len(files)} file(s) did not go in; see above.")

    def _one(self, workspace: Workspace, path: Path, queue: bool) -> str:
        try:
            document, created = document_create(workspace=workspace, actor=None, filename=path.name, data=path.read_bytes(), enqueue=queue)
        except ApplicationError as exc:
            return f"refused: {exc.message}"
        if not created:
            return f"already here as “{document.filename}” ({document.status})"
        if queue:
            return "queued for the worker"
        document_ingest(workspace=workspace, document_id=document.pk)
        document.refresh_from_db()
        if document.status == DocumentStatus.FAILED:
            return f"failed: {document.error}"
        return f"ready: {document.contents or f'{document.page_count} page(s)'}, {document.chunk_count} chunk(s)"


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
