"""The API's limits and failures all answer in the one error shape:
{"error": {"code", "message", "details"}}."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse
from rest_framework.test import APIClient

from apps.core.env import env_rate


def keyed(personas, role: str = "member") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key(role)}")
    return client


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]


def test_each_key_has_its_own_rate_limit_and_429_says_when_to_come_back(personas, settings):
    settings.API_THROTTLE_RATE = "3/min"
    url = reverse("api_documents", args=[personas.workspace_a.pk])
    client, other = keyed(personas), keyed(personas)
    assert [client.get(url).status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get(url)
    assert refused.status_code == 429
    error = error_of(refused)
    assert error["code"] == "throttled"
    assert 0 < error["details"]["retry_after_s"] <= 60
    assert 0 < int(refused["Retry-After"]) <= 60
    assert other.get(url).status_code == 200, "another key is counted apart"


def test_the_rate_setting_is_checked_at_start_up(monkeypatch):
    monkeypatch.setenv("API_THROTTLE_RATE", "lots")
    with pytest.raises(ImproperlyConfigured, match="API_THROTTLE_RATE"):
        env_rate("API_THROTTLE_RATE", "120/min")
    monkeypatch.setenv("API_THROTTLE_RATE", "10/s")
    assert env_rate("API_THROTTLE_RATE", "120/min") == "10/s"


def test_every_kind_of_failure_has_the_one_shape(personas):
    client = keyed(personas)
    queries = reverse("api_queries", args=[personas.workspace_a.pk])
    documents = reverse("api_documents", args=[personas.workspace_a.pk])
    cases = [
        (APIClient().get(queries), 401, "not_authenticated"),
        (keyed(personas, "viewer").post(queries, {"question": "Hi?"}, format="json"), 403, "permission_denied"),
        (client.get(reverse("api_query", args=[personas.workspace_a.pk, personas.workspace_b.pk])), 404, "not_found"),
        (client.get("/api/v1/no-such-thing/"), 404, "not_found"),
        (client.get("/api/v2/workspaces/"), 404, "not_found"),
        (client.put(queries, {"question": "Hi?"}, format="json"), 405, "method_not_allowed"),
        (client.post(documents, {"files": "x"}, format="json"), 415, "unsupported_media_type"),
        (client.post(queries, "{not json", content_type="application/json"), 400, "parse_error"),
        (client.post(queries, {"mode": "yolo"}, format="json"), 400, "invalid"),
        (client.get(queries, {"page": 99}), 404, "not_found"),
    ]
    for response, status, code in cases:
        assert (response.status_code, error_of(response)["code"]) == (status, code), response.content


def test_a_401_asks_for_a_bearer_key(db):
    response = APIClient().get(reverse("api_workspaces"))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'


def test_a_malformed_bearer_header_is_a_401(personas):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer two parts")
    response = client.get(reverse("api_workspaces"))
    assert response.status_code == 401
    assert error_of(response)["code"] == "authentication_failed"


def test_an_unexpected_failure_is_a_500_in_the_one_shape_and_logged(personas, monkeypatch, caplog):
    from apps.documents import api as documents_api

    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(documents_api, "document_list", broken)
    response = keyed(personas).get(reverse("api_documents", args=[personas.workspace_a.pk]))
    assert response.status_code == 500
    assert error_of(response)["code"] == "server_error"
    assert "disk on fire" not in response.content.decode()
    assert "disk on fire" in caplog.text


def test_with_the_rate_limit_s_redis_unreachable_requests_are_served_not_failed(personas, settings):
    from tests.live import free_port

    settings.API_THROTTLE_RATE = "1/min"
    settings.CACHES = settings.CACHES | {
        "throttle": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": f"redis://127.0.0.1:{free_port()}/0"}
    }
    url = reverse("api_documents", args=[personas.workspace_a.pk])
    client = keyed(personas)
    assert [client.get(url).status_code for _ in range(3)] == [200, 200, 200], "nothing counted, nothing refused"
