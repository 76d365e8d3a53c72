from __future__ import annotations

from django import forms
from django.conf import settings


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"multiple": True}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = data if isinstance(data, (list, tuple)) else [data]
        files = [f for f in files if f]
        if not files:
            raise forms.ValidationError("Choose at least one file.")
        if len(files) > settings.UPLOAD_MAX_FILES:
            raise forms.ValidationError(f"Upload at most {settings.UPLOAD_MAX_FILES} files at once.")
        return [super(MultipleFileField, self).clean(f, initial) for f in files]


class UploadForm(forms.Form):
    files = MultipleFileField(label="Files (PDF, Word .docx, .html, .xlsx, .csv, .pptx, .txt, .md)")
