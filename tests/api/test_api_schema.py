"""The OpenAPI schema is generated, served with its docs page from local files, and accurate
enough for schemathesis to fuzz every operation from it without one server error."""

from __future__ import annotations

import re
import time

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from django.urls import reverse
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

from apps.apikeys.services import apikey_create
from apps.sources.models import Source
from apps.workspaces.models import Role
from tests.factories import DocumentFactory, InvitationFactory, MembershipFactory, QueryRunFactory, UserFactory

EXAMPLES_PER_OPERATION = 8
BUDGET_S = 50
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_the_schema_names_every_endpoint_and_the_bearer_scheme(client):
    schema = client.get(reverse("api_schema"), {"format": "json"}).json()
    assert schema["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["apiKey"]["description"],
    }
    paths = set(schema["paths"])
    for path in [
        "/api/v1/workspaces/",
        "/api/v1/workspaces/{workspace_id}/members/{membership_id}/",
        "/api/v1/workspaces/{workspace_id}/api-keys/",
    ]:
        assert path in paths
    ask = schema["paths"]["/api/v1/workspaces/{workspace_id}/queries/"]["post"]
    assert "Idempotency-Key" in [p["name"] for p in ask["parameters"]]
    assert {"201", "202", "400", "401", "403", "404", "422", "429"} <= set(ask["responses"])


def test_the_docs_page_loads_its_assets_from_this_server(client):
    page = client.get(reverse("api_docs")).content.decode()
    assert "swagger-ui" in page
    # No asset from elsewhere (a bare "cdn" can turn up inside the page's random CSRF token).
    assert not re.search(r"(src|href)=[\"'](https?:)?//", page)
    assert not re.search(r"\bcdn\.|//cdn", page.lower())
    assert "https://" not in page
    asset = page.split('src="')[1].split('"')[0]
    assert client.get(asset).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_fuzzing_every_operation_from_the_schema_finds_no_server_error(personas, settings, tmp_path):
    settings.API_THROTTLE_RATE = "100000/min"
    settings.MEDIA_ROOT = tmp_path  # whatever files the fuzzer manages to upload
    a = personas.workspace_a
    secret = apikey_create(workspace=a, actor=None, name="fuzzer", role=Role.ADMIN)[1]
    ids = {
        "workspace_id": str(a.pk),
        "document_id": str(DocumentFactory(workspace=a, batch="5b0c1c43-5f0e-4c36-9a8a-1f1d6f0c2b77").pk),
        "batch_id": "5b0c1c43-5f0e-4c36-9a8a-1f1d6f0c2b77",
        "run_id": str(QueryRunFactory(workspace=a).pk),
        "membership_id": str(MembershipFactory(workspace=a, user=UserFactory(username="tess")).pk),
        "key_id": str(apikey_create(workspace=a, actor=None, name="spare", role=Role.VIEWER)[0].pk),
        "invitation_id": str(InvitationFactory(workspace=a, identifier="nina").pk),
        "source_id": str(Source.objects.create(workspace=a, kind="url", url="https://example.org/", status="done").pk),
    }
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", get_wsgi_application())
    started, failures, calls = time.monotonic(), [], 0
    for result in schema.get_all_operations():
        operation = result.ok()
        fixed = {name: ids[name] for name in ids if f"{{{name}}}" in operation.path}
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            if time.monotonic() - started > BUDGET_S:
                break
            calls += _fuzz(operation, mode, fixed, secret, failures)
    assert failures == []
    assert calls >= 100, "the budget let too few requests through to mean anything"


def _fuzz(operation, mode, path_parameters, secret, failures) -> int:
    sent = 0

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters))
    def run(case):
        nonlocal sent
        sent += 1
        checks = CHECKS if mode == GenerationMode.POSITIVE else [not_a_server_error]
        try:
            case.call_and_validate(headers={"Authorization": f"Bearer {secret}"}, checks=checks)
        except (Exception, BaseExceptionGroup) as exc:  # schemathesis's failed checks: collected, so every operation runs
            failures.append(f"{operation.method.upper()} {operation.path} ({mode.value}): {_describe(exc)}")

    run()
    return sent


def _describe(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)
    return " | ".join(_describe(e) for e in inner) if inner else f"{exc.__class__.__name__}: {str(exc)[:800]}"


def test_the_original_designs_names_are_marked_deprecated_in_the_schema(client):
    """One name for one thing: the aliases stay for existing clients, marked deprecated."""
    schemas = client.get(reverse("api_schema"), {"format": "json"}).json()["components"]["schemas"]
    run = schemas["QueryRun"]["properties"]
    for alias in ("refusal_triggered", "confidence_score", "hallucination_risk"):
        assert run[alias].get("deprecated") is True, alias
    assert schemas["AskRequest"]["properties"]["query"].get("deprecated") is True
    assert "deprecated" not in run["confidence"]
