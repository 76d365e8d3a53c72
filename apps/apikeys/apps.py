from __future__ import annotations

from django.apps import AppConfig


class ApiKeysConfig(AppConfig):
    name = "apps.apikeys"
    label = "apikeys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from apps.apikeys import schema  # noqa: F401 - registers the Bearer scheme with drf-spectacular
