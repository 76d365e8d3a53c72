"""The documents' component for the settings page (workspaces sits below documents and does
not import it): whether a change of chunking still waits for a re-index."""

from __future__ import annotations

from django import template

from apps.documents.selectors import documents_reindex_pending

register = template.Library()


@register.simple_tag
def reindex_pending(workspace) -> bool:
    return documents_reindex_pending(workspace=workspace)
