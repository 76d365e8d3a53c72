from __future__ import annotations

from django.db.models import QuerySet

from apps.core.tenancy import access
from apps.documents.models import Document
from apps.workspaces.models import Workspace


def document_list(*, workspace: Workspace) -> QuerySet[Document]:
    return Document.objects.filter(workspace=workspace).select_related("uploaded_by").defer("text")


def access_document(workspace: Workspace, document_id) -> Document:
    return access(Document, workspace, document_id)


def document_file_names(*, workspace: Workspace) -> list[str]:
    return [name for name in Document.objects.filter(workspace=workspace).values_list("file", flat=True) if name]
