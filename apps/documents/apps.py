from __future__ import annotations

from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    name = "apps.documents"
    label = "documents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.workspaces.signals import workspace_deleted

        workspace_deleted.connect(_drop_vector_index, dispatch_uid="documents.drop_vector_index")


def _drop_vector_index(sender, *, workspace_id, **kwargs) -> None:
    from apps.documents.services import workspace_vector_index_drop

    workspace_vector_index_drop(workspace_id=workspace_id)
