"""The test bootstrap, loaded before pytest-django reads the settings (`-p tests.bootstrap`
in pyproject.toml): it starts the embedded Postgres and Redis the environment does not point
elsewhere, as manage.py does for every command."""

from __future__ import annotations

from pathlib import Path

from apps.core.embedded import start_unconfigured

start_unconfigured(Path(__file__).resolve().parents[1])
