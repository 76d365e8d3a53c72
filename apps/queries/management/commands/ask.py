from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from apps.audits.selectors import audit_record_for_run
from apps.core.errors import ApplicationError
from apps.queries.models import QueryMode
from apps.queries.services import query_answer
from apps.workspaces.models import Workspace


class Command(BaseCommand):
    help = "Ask a workspace a question here in this process and print the full result as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="the workspace's slug")
        parser.add_argument("--mode", choices=QueryMode.values, default=QueryMode.VERIFIED)
        parser.add_argument("--threshold", type=float, help="override the workspace's gate threshold (0–1)")
        parser.add_argument("question")

    def handle(self, *args, workspace: str, mode: str, threshold: float | None, question: str, **options):
        target = Workspace.objects.filter(slug=workspace).first()
        if target is None:
            raise CommandError(f"No workspace with the slug “{workspace}”.")
        try:
            run = query_answer(
                workspace=target, actor=None, question=question, mode=mode, threshold_override=threshold, actor_label="manage.py ask"
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        record = audit_record_for_run(workspace=target, query_run_id=run.pk)
        self.stdout.write(json.dumps(_result(run, record), ensure_ascii=False, indent=2))


def _result(run, record) -> dict:
    return {
        "id": str(run.pk),
        "question": run.question,
        "mode": run.mode,
        "answer": run.answer,
        "refusal": run.insufficient,
        "gate": run.gate,
        "claims": run.claims,
        "sources": [{k: v for k, v in s.items() if k != "text"} for s in run.sources],
        "confidence": run.confidence,
        "risk": run.risk,
        "trust": run.trust,
        "provider": run.provider,
        "provider_attempts": run.attempts,
        "audit_id": None if record is None else str(record.pk),
        "audit_sequence": None if record is None else record.sequence,
        "duration_ms": run.duration_ms,
    }
