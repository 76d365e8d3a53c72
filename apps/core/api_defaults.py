"""The classes REST_FRAMEWORK names as defaults: pagination and the rate limit.

DRF imports them while its own views module loads, so nothing here may import
rest_framework.views or .generics (nor apps.core.api, which does).
"""

from __future__ import annotations

import json
import logging
import math

from django.conf import settings
from rest_framework import exceptions, metadata, negotiation, pagination, parsers, throttling

from apps.core.credentials import WorkspaceCredential
from apps.core.guard import JSONUnreadable, read_json
from apps.core.ratelimit import window_hit

log = logging.getLogger(__name__)


class Pagination(pagination.PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 100


class ApiRateThrottle(throttling.SimpleRateThrottle):
    """API_THROTTLE_RATE requests per API key, per person (all their tokens and sessions
    together), or per address for anonymous calls, in any window of that length: a sliding
    window kept in Redis by one atomic script, so every thread of every web process shares it
    and parallel requests cannot overrun it (DRF's own history is a read-modify-write that
    loses updates under concurrency)."""

    scope = "api"

    def get_rate(self) -> str:
        return settings.API_THROTTLE_RATE

    def get_cache_key(self, request, view) -> str:
        if isinstance(request.auth, WorkspaceCredential):
            who = f"key:{request.auth.pk}"
        elif request.user.is_authenticated:
            who = f"user:{request.user.pk}"
        else:
            who = f"ip:{self.get_ident(request)}"
        return f"rate:api:{who}"

    def allow_request(self, request, view) -> bool:
        try:
            self.waited_s = window_hit(self.get_cache_key(request, view), limit=self.num_requests, window_s=self.duration)
        except Exception:  # Redis down: serve rather than fail every call (healthz reports Redis)
            log.warning("API rate limit not checked: the throttle cache is unreachable", exc_info=True)
            return True
        return self.waited_s == 0

    def wait(self) -> float:
        """Seconds until the oldest request in the window leaves it (at least 1: Retry-After is whole seconds)."""
        return float(max(1, math.ceil(self.waited_s)))


class JSONParser(parsers.JSONParser):
    """DRF's parser on the one reader of JSON from outside (`apps.core.guard.read_json`): nesting
    deeper than it allows, NaN and Infinity are 400s, as are lone surrogates (valid JSON
    escapes that no database text can hold), wherever they are, keys included."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = parsers.get_encoding(parser_context or {})
        try:
            data = read_json(stream.read().decode(encoding))
            json.dumps(data, ensure_ascii=False).encode()
        except JSONUnreadable as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}.") from None
        except UnicodeDecodeError:
            raise exceptions.ParseError(f"JSON parse error - the body is not {encoding} text.") from None
        except UnicodeEncodeError:
            raise exceptions.ParseError(
                "JSON parse error - a string holds a lone surrogate (\\ud800-\\udfff), which is not text."
            ) from None
        return data


class JSONOnlyNegotiation(negotiation.DefaultContentNegotiation):
    """The API answers in JSON, whatever else a client asks for: `Accept: text/html` or
    `?format=api` is a 406 that says so, decided before the view runs (so no write happens
    for a request whose answer could not be sent). The docs pages keep their own renderers."""

    MESSAGE = "This API answers in JSON only: send Accept: application/json (or */*) and no ?format= other than json."

    def filter_renderers(self, renderers, format):
        kept = [renderer for renderer in renderers if renderer.format == format]
        if not kept:
            raise exceptions.NotAcceptable(self.MESSAGE)
        return kept

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except exceptions.NotAcceptable:
            raise exceptions.NotAcceptable(self.MESSAGE) from None


class Metadata(metadata.SimpleMetadata):
    """OPTIONS: name, description, formats, and the fields of a write only where the endpoint
    declares a serializer for it. An action without a body (re-index, apply) has none to show."""

    def determine_actions(self, request, view):
        if getattr(view, "serializer_class", None) is None:
            return {}
        return super().determine_actions(request, view)
