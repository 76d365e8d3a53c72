"""The API's input fields, strict: every serializer that reads input uses these.

DRF's own fields coerce: {"question": 123} becomes "123", {"async": "yes"} True,
{"threshold_override": "0.5"} 0.5. These take a JSON value of their own type only (a form or
multipart body, where every value is text, is read as DRF reads it), and text goes through the
one text guard (`apps.core.guard`), so the API refuses what the pages refuse, in the same words.
"""

from __future__ import annotations

from django.http import QueryDict
from rest_framework import serializers

from apps.core.guard import kind_of, text_problem


class TextField(serializers.CharField):
    """Text only, held to `apps.core.guard` (NUL, other control characters, lone surrogates,
    length; with `one_line`, line breaks and text-direction controls too)."""

    def __init__(self, *, one_line: bool = False, **kwargs):
        self.one_line = one_line
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if problem := text_problem(data, max_length=self.max_length, one_line=self.one_line):
            raise serializers.ValidationError(f"“{self.field_name}” {problem}", code="invalid")
        return super().to_internal_value(data)


class SlugField(serializers.SlugField):
    def to_internal_value(self, data):
        if problem := text_problem(data, max_length=self.max_length, one_line=True):
            raise serializers.ValidationError(f"“{self.field_name}” {problem}", code="invalid")
        return super().to_internal_value(data)


class ChoiceField(serializers.ChoiceField):
    """One of the choices, sent as text: 1 is not "1"."""

    def to_internal_value(self, data):
        _check_type(self, data, (str,), "text")
        return super().to_internal_value(data)


class BooleanField(serializers.BooleanField):
    """JSON true or false: not "yes", "on", 1 or "0"."""

    def to_internal_value(self, data):
        _check_type(self, data, (bool,), "true or false")
        return super().to_internal_value(data)


class IntegerField(serializers.IntegerField):
    """A JSON whole number: not "5", not true."""

    def to_internal_value(self, data):
        _check_type(self, data, (int,), "a whole number")
        return super().to_internal_value(data)


class FloatField(serializers.FloatField):
    """A JSON number: not "0.5", not true."""

    def to_internal_value(self, data):
        _check_type(self, data, (int, float), "a number")
        return super().to_internal_value(data)


STRICT_FIELDS = (TextField, SlugField, ChoiceField, BooleanField, IntegerField, FloatField)


def _check_type(field: serializers.Field, data, types: tuple[type, ...], wanted: str) -> None:
    if isinstance(getattr(field.root, "initial_data", None), QueryDict):
        return  # a form or multipart body: every value is text, read as the field reads text
    if (isinstance(data, bool) and bool not in types) or not isinstance(data, types):
        raise serializers.ValidationError(f"“{field.field_name}” must be {wanted}, not {kind_of(data)}.", code="invalid")
