"""Bad environment values stop the process at start-up with the variable's name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def manage_check(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=os.environ | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("DEBUG", "maybe", "must be a boolean"),
        ("EMBEDDED_REDIS_PORT", "six-three-nine-zero", "must be an integer"),
        ("EMBEDDED_REDIS_PORT", "70000", "at most 65535"),
        ("DATABASE_URL", "mysql://db/trustrag", "postgres://"),
        ("REDIS_URL", "http://localhost:6379", "redis://"),
        ("UPLOAD_MAX_BYTES", "0", "at least 1"),
        ("WORKER_PING_TIMEOUT_S", "soon", "must be a number"),
        ("VERIFIER_THREADS", "0", "at least 1"),
    ],
)
def test_a_bad_value_fails_at_start_up_naming_the_variable(variable, value, says):
    result = manage_check(**{variable: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert variable in result.stderr
    assert says in result.stderr


def test_external_services_need_a_secret_key():
    result = manage_check(DATABASE_URL="postgresql://u:p@127.0.0.1:1/x", REDIS_URL="redis://127.0.0.1:1/0", SECRET_KEY="")
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_a_database_url_password_is_not_echoed_in_the_error():
    result = manage_check(DATABASE_URL="mysql://user:hunter2@db/trustrag")
    assert "DATABASE_URL" in result.stderr
    assert "hunter2" not in result.stderr


def test_the_settings_start_with_valid_values():
    result = manage_check(DEBUG="false", UPLOAD_MAX_BYTES="1024")
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_with_external_urls_nothing_embedded_starts(tmp_path, settings):
    """Pointed at running servers, a command starts no Postgres or Redis of its own."""
    db = settings.DATABASES["default"]
    result = manage_check(
        DATABASE_URL=f"postgresql://{db['USER']}@/{db['NAME']}?host={db['HOST']}",
        REDIS_URL=settings.REDIS_URL,
        SECRET_KEY="external-mode-test-key",
        TRUSTRAG_VAR_DIR=str(tmp_path / "var"),
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "var" / "postgres").exists()
    assert not (tmp_path / "var" / "redis").exists()
    assert not (tmp_path / "var" / "secret_key").exists()
