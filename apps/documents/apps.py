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
    # Last in the deleting transaction, since dropping an index locks its table until the commit.
    from django.db import connection

    from apps.documents.sql import vector_index_drop

    with connection.cursor() as cursor:
        vector_index_drop(cursor, workspace_id=workspace_id)
