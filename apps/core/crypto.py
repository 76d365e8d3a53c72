"""Secrets stored at rest (per-workspace provider keys): Fernet, keyed by FIELD_ENCRYPTION_KEY
or, when that is unset, by a key derived from SECRET_KEY."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def _fernet() -> Fernet:
    if settings.FIELD_ENCRYPTION_KEY:
        try:
            return Fernet(settings.FIELD_ENCRYPTION_KEY)
        except ValueError as exc:
            raise ImproperlyConfigured("FIELD_ENCRYPTION_KEY must be a Fernet key (32 url-safe base64-encoded bytes)") from exc
    derived = hashlib.sha256(b"trustrag field encryption\0" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(derived))


def encrypt(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    """The plain text, or "" when the token was made with another key (the key was rotated)."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return ""
