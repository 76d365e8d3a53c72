from __future__ import annotations

from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "apps.sources"
    label = "sources"
    default_auto_field = "django.db.models.BigAutoField"
