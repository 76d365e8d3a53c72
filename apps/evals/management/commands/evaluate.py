from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.core.errors import ApplicationError
from apps.evals.selectors import eval_run_report
from apps.evals.services import eval_run_create, eval_run_execute, eval_set_create
from apps.workspaces.models import Workspace


class Command(BaseCommand):
    help = (
        "Run an evaluation set (JSONL, CSV or SQuAD 2.0 JSON) through a workspace's real pipeline, in this process, and print "
        "its metrics, threshold sweep and recommendation as JSON. The set and the run stay in the workspace's Evaluations."
    )

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="the workspace's slug")
        parser.add_argument("--set", required=True, type=Path, dest="set_path", help="the evaluation set file")
        parser.add_argument("--name", default="", help="the set's name (default: the file's name)")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, workspace: str, set_path: Path, name: str, json_path: str | None, **options):
        target = Workspace.objects.filter(slug=workspace).first()
        if target is None:
            raise CommandError(f"No workspace “{workspace}”.")
        try:
            data = set_path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{set_path} cannot be read: {exc.strerror}.") from None
        started = time.perf_counter()
        try:
            eval_set = eval_set_create(workspace=target, actor=None, filename=set_path.name, data=data, name=name)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        run = eval_run_create(workspace=target, actor=None, set_id=eval_set.pk, enqueue=False)
        progress(f"{eval_set.question_count} questions, each in verified and naive mode")
        run = eval_run_execute(workspace=target, run_id=run.pk, on_progress=_report_progress(started))
        result = {"workspace": target.slug, "set": str(eval_set.pk), "run": str(run.pk)} | eval_run_report(run)
        line = json.dumps(result | {"seconds": round(time.perf_counter() - started, 1)})
        if json_path:
            Path(json_path).write_text(line + "\n")
        self.stdout.write(line)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _report_progress(started: float):
    def report(done: int, total: int) -> None:
        if done % 10 == 0 or done == total:
            progress(f"{done}/{total} questions, {time.perf_counter() - started:.0f} s")

    return report
