from __future__ import annotations

from django import forms

from apps.core.forms import TextField


class EvalSetUploadForm(forms.Form):
    file = forms.FileField(label="File (.jsonl, .csv or SQuAD 2.0 .json)")
    name = TextField(required=False, max_length=200, one_line=True, label="Name", help_text="the file's name when empty")
