from __future__ import annotations

from django import forms


class EvalSetUploadForm(forms.Form):
    file = forms.FileField(label="File (.jsonl, .csv or SQuAD 2.0 .json)")
    name = forms.CharField(required=False, max_length=200, label="Name", help_text="the file's name when empty")
