"""Strict types on every API input and one text guard on every input path: a number is not
text, text is not a number, and what the database cannot hold is refused in the same words on a
page, in the API and for a line of an uploaded file."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

from django import forms
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator
from rest_framework import serializers
from rest_framework.test import APIClient

from apps.apikeys.models import ApiKey
from apps.core import forms as guarded
from apps.core.strict import STRICT_FIELDS
from apps.evals.models import EvalSet
from apps.queries.models import QueryRun
from apps.workspaces.models import Workspace

APPS = Path(__file__).resolve().parents[2] / "apps"


def classes_in(module_name: str, base: type) -> list[type]:
    module = importlib.import_module(module_name)
    return [c for _, c in inspect.getmembers(module, inspect.isclass) if issubclass(c, base) and c.__module__ == module_name]


def modules(name: str) -> list[str]:
    return [f"apps.{path.parent.name}.{name}" for path in sorted(APPS.glob(f"*/{name}.py"))]


def request_serializers() -> dict[str, type]:
    """Every serializer the API reads a request body with, found through the schema generated
    from the URLconf (drf-spectacular names a body "<Name>Request", "Patched<Name>Request")."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    names = {
        body["schema"]["$ref"].rsplit("/", 1)[1].removeprefix("Patched").removesuffix("Request") + "Serializer"
        for operations in schema["paths"].values()
        for operation in operations.values()
        for body in operation.get("requestBody", {}).get("content", {}).values()
    }
    known = {c.__name__: c for module in modules("api") for c in classes_in(module, serializers.Serializer)}
    assert names <= set(known), f"request bodies without a serializer in an api module: {names - set(known)}"
    return {name: known[name] for name in names}


def test_every_serializer_field_that_reads_input_is_strict():
    found = request_serializers()
    assert {"AskSerializer", "WorkspaceCreateSerializer", "WorkspaceSettingsSerializer", "EvalSetUploadSerializer"} <= set(found)
    checked = 0
    for serializer in found.values():
        for name, field in serializer().get_fields().items():
            if field.read_only or isinstance(field, serializers.FileField):
                continue
            if isinstance(field, serializers.ListField) and isinstance(field.child, serializers.FileField):
                continue
            assert isinstance(field, STRICT_FIELDS), f"{serializer.__name__}.{name} is a {type(field).__name__}, not a strict field"
            checked += 1
    assert checked >= 30  # the settings' fields, the question's, the names, roles and identifiers


def test_every_text_field_of_every_form_is_held_to_the_guard():
    checked = 0
    for module in modules("forms"):
        for form in classes_in(module, forms.Form):
            fields = form.base_fields if form.__init__ is forms.Form.__init__ else form(**_init_args(form)).fields
            for name, field in fields.items():
                if type(field) is forms.CharField:
                    raise AssertionError(f"{form.__name__}.{name} is a plain CharField: use apps.core.forms.TextField")
                checked += isinstance(field, guarded.TextField)
    assert checked >= 9


def _init_args(form: type) -> dict:
    from apps.workspaces.models import WorkspaceSettings

    return {"options": WorkspaceSettings()} if "options" in inspect.signature(form.__init__).parameters else {}


def keyed(personas, role: str = "member") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key(role)}")
    return client


def test_a_number_is_not_a_question_and_is_not_stored_as_one(personas):
    response = keyed(personas).post(reverse("api_queries", args=[personas.workspace_a.pk]), {"question": 123}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"question": ["“question” must be text, not a number."]}
    assert not QueryRun.objects.exists()


def test_a_number_is_not_a_workspace_name_and_text_is_not_a_switch(personas):
    client = personas.client("owner")
    before = Workspace.objects.count()
    named = client.post(reverse("api_workspaces"), {"name": 5}, content_type="application/json")
    assert named.status_code == 400
    assert named.json()["error"]["details"] == {"name": ["“name” must be text, not a number."]}
    assert Workspace.objects.count() == before
    ask = reverse("api_queries", args=[personas.workspace_a.pk])
    for body, field, message in [
        ({"question": "Who?", "async": "yes"}, "async", "“async” must be true or false, not text."),
        ({"question": "Who?", "threshold_override": "0.5"}, "threshold_override", "“threshold_override” must be a number, not text."),
        ({"question": "Who?", "mode": 1}, "mode", "“mode” must be text, not a number."),
    ]:
        refused = keyed(personas).post(ask, body, format="json")
        assert refused.json()["error"]["details"] == {field: [message]}, body
    settings_url = reverse("api_settings", args=[personas.workspace_a.pk])
    patched = keyed(personas, "admin").patch(settings_url, {"dense_k": "12"}, format="json")
    assert patched.json()["error"]["details"] == {"dense_k": ["Dense candidates must be a whole number, not text."]}


def test_a_nul_is_refused_in_the_same_words_on_the_page_and_in_the_api(personas):
    said = "holds a NUL character (U+0000), which text cannot hold; send plain text."
    api = personas.client("admin").post(
        reverse("api_keys", args=[personas.workspace_a.pk]),
        json.dumps({"name": "ci\x00", "role": "member"}),
        content_type="application/json",
    )
    assert api.json()["error"]["details"] == {"name": [f"“name” {said}"]}
    page = personas.client("admin").post(reverse("api_keys_page", args=["acme"]), {"name": "ci\x00", "role": "member"})
    assert page.status_code == 400
    assert f"“Name” {said}" in page.content.decode()
    upload = SimpleUploadedFile("set.jsonl", b'{"question": "Who\\u0000?", "answerable": true}')
    evals = personas.client("member").post(reverse("evaluations", args=["acme"]), {"file": upload})
    assert f"Line 1: “question” {said}" in evals.content.decode()
    assert not ApiKey.objects.filter(name__startswith="ci").exists()
    assert not EvalSet.objects.exists()
