from __future__ import annotations

from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "apps.audits"
    label = "audits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from apps.audits.services import audit_event_record
        from apps.core.events import event_recorder_set

        event_recorder_set(audit_event_record)  # every app's admin actions land in the trail
