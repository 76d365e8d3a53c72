from __future__ import annotations

from django.apps import AppConfig


class BenchConfig(AppConfig):
    """The benchmark commands (BENCHMARKS.md beside this file). Development and test only:
    nothing in `apps/` imports this package, and it calls only public services and selectors."""

    name = "bench"
    label = "bench"
    default_auto_field = "django.db.models.BigAutoField"
