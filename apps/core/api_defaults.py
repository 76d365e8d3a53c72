"""The classes REST_FRAMEWORK names as defaults: pagination and the rate limit.

DRF imports them while its own views module loads, so nothing here may import
rest_framework.views or .generics (nor apps.core.api, which does).
"""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.core.cache import caches
from rest_framework import exceptions, pagination, parsers, throttling

from apps.core.credentials import WorkspaceCredential

log = logging.getLogger(__name__)


class Pagination(pagination.PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 100


class ApiRateThrottle(throttling.SimpleRateThrottle):
    """API_THROTTLE_RATE requests per API key, per person (all their tokens and sessions
    together), or per address for anonymous calls; counted in Redis, shared by every process."""

    scope = "api"

    def __init__(self):
        self.cache = caches["throttle"]
        super().__init__()

    def get_rate(self) -> str:
        return settings.API_THROTTLE_RATE

    def get_cache_key(self, request, view) -> str:
        if isinstance(request.auth, WorkspaceCredential):
            who = f"key:{request.auth.pk}"
        elif request.user.is_authenticated:
            who = f"user:{request.user.pk}"
        else:
            who = f"ip:{self.get_ident(request)}"
        return f"throttle:api:{who}"

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except Exception:  # Redis down: serve rather than fail every call (healthz reports Redis)
            log.warning("API rate limit not checked: the throttle cache is unreachable", exc_info=True)
            return True


class JSONParser(parsers.JSONParser):
    """DRF's parser, refusing as a 400 what would otherwise fail deeper down: nesting deep
    enough to exhaust the recursion limit, and lone surrogates (valid JSON escapes that no
    database text can hold)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
            json.dumps(data, ensure_ascii=False).encode()
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply.") from None
        except UnicodeEncodeError:
            raise exceptions.ParseError(
                "JSON parse error - a string holds a lone surrogate (\\ud800-\\udfff), which is not text."
            ) from None
        return data
