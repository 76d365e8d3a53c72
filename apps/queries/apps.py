from __future__ import annotations

from django.apps import AppConfig


class QueriesConfig(AppConfig):
    name = "apps.queries"
    label = "queries"
    default_auto_field = "django.db.models.BigAutoField"
