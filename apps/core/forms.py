from __future__ import annotations

from django import forms

from apps.core.guard import text_problem


class TextField(forms.CharField):
    """A page's text field held to the one text guard (`apps.core.guard`): the form says what
    the API says — NUL, other control characters, lone surrogates, length and, with
    `one_line`, line breaks and text-direction controls."""

    def __init__(self, *, one_line: bool = False, **kwargs):
        self.one_line = one_line
        super().__init__(**kwargs)

    def to_python(self, value):
        value = super().to_python(value)
        if problem := text_problem(value, max_length=self.max_length, one_line=self.one_line):
            raise forms.ValidationError(f"“{self.label or 'This field'}” {problem}", code="invalid")
        return value
