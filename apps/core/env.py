"""Typed readers for environment variables that fail loudly on a bad value.

Every setting of the project comes through one of these, so a typo in a
deployment stops the process at start-up with the variable's name in the
message instead of surfacing later as odd behaviour.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no, on/off), got {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    return _env_number(name, default, int, "an integer", minimum, maximum)


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    return _env_number(name, default, float, "a number", minimum, maximum)


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None or value == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_rate(name: str, default: str) -> str:
    """A request rate as Django REST framework reads it: `120/min`, `10/s`, `5000/hour`, `20000/day`."""
    value = _raw(name) or default
    if not re.fullmatch(r"[1-9]\d*/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ImproperlyConfigured(f"{name} must be a rate like 120/min (per s, min, hour or day), got {value!r}")
    return value


def env_url(name: str, *, schemes: tuple[str, ...]) -> str | None:
    """A URL whose scheme is one of `schemes`, or None when the variable is unset."""
    value = _raw(name)
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in schemes:
        raise ImproperlyConfigured(f"{name} must be a URL starting with {' or '.join(s + '://' for s in schemes)}, got {_redact(value)!r}")
    return value


def database_from_url(name: str, url: str) -> dict:
    """Django DATABASES entry for a postgres:// URL (host may be a socket directory)."""
    parts = urlsplit(url)
    query = dict(item.split("=", 1) for item in parts.query.split("&") if "=" in item)
    db_name = parts.path.lstrip("/")
    if not db_name:
        raise ImproperlyConfigured(f"{name} must name a database, e.g. postgresql://user:pass@host:5432/trustrag")
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name} has an invalid port") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": db_name,
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": query.pop("host", parts.hostname or ""),
        "PORT": str(port or ""),
        "OPTIONS": query,
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }


def _env_number(name, default, cast, kind: str, minimum, maximum):
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = cast(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {kind}, got {value!r}") from None
    _check_range(name, number, minimum, maximum)
    return number


def _check_range(name: str, number: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {number}")


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        return url.replace(parts.password, "***")
    return url
