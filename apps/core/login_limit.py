"""Failed logins counted per username and address in Redis: past LOGIN_MAX_FAILURES within
LOGIN_LOCKOUT_S that pair is refused (429) until the window ends. Guessing one person's password
from one address is stopped; the person can still log in from elsewhere."""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.core.cache import caches

log = logging.getLogger(__name__)


def login_key(username: str, address: str) -> str:
    digest = hashlib.sha256(f"{username.strip().casefold()}\0{address}".encode()).hexdigest()[:32]
    return f"login-failures:{digest}"


def login_blocked(key: str) -> bool:
    try:
        return (caches["throttle"].get(key) or 0) >= settings.LOGIN_MAX_FAILURES
    except Exception:  # Redis down: let people log in rather than lock everyone out (healthz reports it)
        log.warning("login limit not checked: the throttle cache is unreachable")
        return False


def login_failed(key: str) -> None:
    cache = caches["throttle"]
    try:
        if not cache.add(key, 1, timeout=settings.LOGIN_LOCKOUT_S):
            cache.incr(key)
    except Exception:
        log.warning("failed login not counted: the throttle cache is unreachable")


def login_succeeded(key: str) -> None:
    try:
        caches["throttle"].delete(key)
    except Exception:
        log.warning("login failures not reset: the throttle cache is unreachable")
