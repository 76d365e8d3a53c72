from __future__ import annotations

from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "apps.evals"
    label = "evals"
    default_auto_field = "django.db.models.BigAutoField"
