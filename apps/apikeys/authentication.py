"""`Authorization: Bearer <key>`: a workspace API key as a DRF credential."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from apps.apikeys.models import ApiKey
from apps.apikeys.services import apikey_authenticate


class ApiKeyUser:
    """request.user of a call made with an API key: authenticated, but not a person.

    It is no `User`: nothing can store it as one, so code that records a person gets None
    (see `KeyMembership.user`) and the audit trail names the key."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = id = None

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key

    def get_username(self) -> str:
        return self.api_key.label

    def __str__(self) -> str:
        return self.api_key.label


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.lower().encode():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Send the key as “Authorization: Bearer <key>”, with no spaces in the key.")
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("An API key is ASCII.") from None
        key = apikey_authenticate(secret=secret)
        if key is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked API key.")
        return ApiKeyUser(key), key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'
