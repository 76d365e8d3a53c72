from __future__ import annotations

import uuid

from django.db.models import Count, QuerySet

from apps.sources.models import Source, SourceItem
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access


def source_list(*, workspace: Workspace) -> QuerySet[Source]:
    return (
        Source.objects.filter(workspace=workspace)
        .select_related("created_by")
        .annotate(item_count=Count("items"))
        .order_by("-created_at", "pk")
    )


def source_get(*, workspace: Workspace, source_id) -> Source:
    return access(Source, workspace, source_id, source_list(workspace=workspace))


def source_items(*, workspace: Workspace, source_id) -> QuerySet[SourceItem]:
    return SourceItem.objects.filter(workspace=workspace, source_id=source_id)


def source_items_for_documents(*, workspace: Workspace, document_ids) -> dict[str, SourceItem]:
    """The item each document came from (where it came from a source), by document id as text:
    how its citations name it ("PMID 27633186", a URL)."""
    items = SourceItem.objects.filter(workspace=workspace, document_id__in=[d for d in map(_uuid, document_ids) if d])
    return {str(item.document_id): item for item in items}


def _uuid(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
