from __future__ import annotations

from django.apps import AppConfig


class QueriesConfig(AppConfig):
    name = "apps.queries"
    label = "queries"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.documents.signals import document_text_changed

        document_text_changed.connect(_note_source_change, dispatch_uid="queries.note_source_change")


def _note_source_change(sender, *, workspace, document_id, **kwargs) -> None:
    from apps.queries.sources import query_runs_note_source_change

    query_runs_note_source_change(workspace=workspace, document_id=document_id)
