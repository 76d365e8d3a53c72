from __future__ import annotations

from django import forms
from django.conf import settings

from apps.core.forms import TextField
from apps.queries.models import QueryMode


class AskForm(forms.Form):
    question = TextField(
        label="Question",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Ask a question about this workspace's documents"}),
        max_length=settings.QUESTION_MAX_CHARS,
    )
    mode = forms.ChoiceField(
        choices=QueryMode.choices,
        initial=QueryMode.VERIFIED,
        widget=forms.RadioSelect,
        help_text="Verified refuses weak evidence and checks every quote; naive is plain retrieval and generation, to compare.",
    )
