from __future__ import annotations

from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "apps.audits"
    label = "audits"
    default_auto_field = "django.db.models.BigAutoField"
