"""`Idempotency-Key` on API writes: a repeat within 24 hours gets the first response again.

The key is scoped to the workspace and the credential (an API key, or a person with any of
their tokens and sessions), so two integrations never see each other's responses. A repeat
with another body is refused (422); one that arrives while the first is still running is
told to wait (409) rather than doing the work a second time.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from functools import wraps

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework.response import Response

from apps.core.credentials import WorkspaceCredential
from apps.core.errors import ApplicationError
from apps.workspaces.models import IdempotencyRecord

HEADER = "Idempotency-Key"
KEEP_FOR = timedelta(hours=24)
# A first request still unfinished after this long died with its process; the key is free again.
ABANDONED_AFTER = timedelta(minutes=10)
REPLAYED_HEADERS = ("Location",)
PARAMETER = OpenApiParameter(
    HEADER,
    location=OpenApiParameter.HEADER,
    required=False,
    description="Any unique string (e.g. a UUID) per logical request: a repeat with the same key within 24 hours "
    "returns the first response (marked `Idempotent-Replayed: true`) without doing the work again.",
)


def idempotent(handler):
    """Decorate an API view's `post`: the view must have resolved request.workspace."""

    @wraps(handler)
    def wrapped(view, request, *args, **kwargs):
        key = request.headers.get(HEADER)
        if key is None:
            return handler(view, request, *args, **kwargs)
        record, first = _claim(request, _checked(key))
        if not first:
            return _replay(record)
        try:
            response = handler(view, request, *args, **kwargs)
        except BaseException:
            record.delete()  # nothing was done, or it was undone: the same key may try again
            raise
        _keep(record, response)
        return response

    return wrapped


def credential_of(request) -> str:
    if isinstance(request.auth, WorkspaceCredential):
        return f"key:{request.auth.pk}"
    return f"user:{request.user.pk}"


def idempotency_purge() -> int:
    """Forget responses older than KEEP_FOR; returns how many."""
    return IdempotencyRecord.objects.filter(created_at__lt=timezone.now() - KEEP_FOR).delete()[0]


def _checked(key: str) -> str:
    if not 1 <= len(key) <= 255 or not key.isprintable():
        raise ApplicationError(f"{HEADER} must be 1 to 255 printable characters, e.g. a UUID.", code="invalid_idempotency_key")
    return key


def _claim(request, key: str) -> tuple[IdempotencyRecord, bool]:
    """The record of this key, created (True) when this request is the first to use it."""
    fingerprint = _fingerprint(request)
    scope = {"workspace": request.workspace, "credential": credential_of(request), "key": key}
    now = timezone.now()
    with transaction.atomic():
        expired = Q(created_at__lt=now - KEEP_FOR) | Q(status_code__isnull=True, created_at__lt=now - ABANDONED_AFTER)
        IdempotencyRecord.objects.filter(**scope).filter(expired).delete()
        # A concurrent first request's INSERT makes this one wait on the unique index, then find its row.
        record, created = IdempotencyRecord.objects.get_or_create(**scope, defaults={"fingerprint": fingerprint})
    if not created and record.fingerprint != fingerprint:
        raise ApplicationError(
            f"This {HEADER} was used in the last 24 hours for a different request; send a new key with a new request.",
            status=422,
            code="idempotency_key_reused",
        )
    return record, created


def _replay(record: IdempotencyRecord) -> Response:
    if record.status_code is None:
        raise ApplicationError(
            f"The first request with this {HEADER} is still being processed; repeat it in a moment to get its result.",
            status=409,
            code="idempotency_in_progress",
        )
    return Response(record.body, status=record.status_code, headers=record.headers | {"Idempotent-Replayed": "true"})


def _keep(record: IdempotencyRecord, response: Response) -> None:
    if response.status_code >= 500:
        record.delete()
        return
    record.status_code = response.status_code
    record.body = response.data
    record.headers = {name: response[name] for name in REPLAYED_HEADERS if response.has_header(name)}
    record.save(update_fields=["status_code", "body", "headers"])


def _fingerprint(request) -> str:
    """What makes two requests "the same": method, path and the parsed body, files by content
    (a multipart body's raw bytes differ with every boundary)."""
    digest = hashlib.sha256(f"{request.method} {request.path}\n".encode())
    data = request.data
    if hasattr(data, "lists"):  # form or multipart: every value of every field, in order
        for name, values in sorted(data.lists(), key=lambda item: item[0]):
            for value in values:
                digest.update(f"{name}=".encode())
                digest.update(_file_digest(value) if hasattr(value, "chunks") else str(value).encode())
                digest.update(b"\n")
    else:
        digest.update(json.dumps(data, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _file_digest(upload) -> bytes:
    file_hash = hashlib.sha256(f"{upload.name}\n".encode())
    for chunk in upload.chunks():
        file_hash.update(chunk)
    upload.seek(0)
    return file_hash.hexdigest().encode()
