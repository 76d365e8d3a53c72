"""The API's docs pages (Swagger UI and Redoc, drf-spectacular's views): HTML pages read in a
browser. They answer GET and HEAD with the page whatever the client's Accept header or
?format= says, since the page is the only thing they have; the API itself answers in JSON
only (api_defaults.JSONOnlyNegotiation)."""

from __future__ import annotations

from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView
from rest_framework.negotiation import BaseContentNegotiation


class PageNegotiation(BaseContentNegotiation):
    def select_parser(self, request, parsers):
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        renderer = renderers[0]
        return renderer, renderer.media_type


class SwaggerPage(SpectacularSwaggerView):
    content_negotiation_class = PageNegotiation
    http_method_names = ["get", "head"]


class RedocPage(SpectacularRedocView):
    content_negotiation_class = PageNegotiation
    http_method_names = ["get", "head"]
