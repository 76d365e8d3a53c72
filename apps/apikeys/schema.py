"""How the OpenAPI schema describes API-key authentication (loaded by ApiKeysConfig.ready)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "apps.apikeys.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A workspace API key (`trk_…`), created by a workspace admin; it works in its own workspace only, with its role.",
        }
