"""The audit trail's components for pages of apps below audits (the settings page of the
workspaces app shows its change history through this tag, without importing audits)."""

from __future__ import annotations

from django import template

from apps.audits.selectors import audit_event_list

register = template.Library()


@register.simple_tag
def settings_history(workspace, limit: int = 50):
    """Changes to the workspace's settings and providers, newest first."""
    return list(audit_event_list(workspace=workspace, actions=["settings."])[:limit])
