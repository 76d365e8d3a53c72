from __future__ import annotations

from django import forms
from django.conf import settings

from apps.core.forms import TextField
from apps.sources.models import Schedule


class PubMedForm(forms.Form):
    query = TextField(label="PubMed query", max_length=4000, one_line=True)
    max_count = forms.IntegerField(label="Articles at most", min_value=1, initial=50)
    schedule = forms.ChoiceField(label="Re-check", choices=Schedule.choices, initial=Schedule.OFF, required=False)

    def clean_max_count(self) -> int:
        count = self.cleaned_data["max_count"]
        if count > settings.PUBMED_MAX_COUNT:
            raise forms.ValidationError(f"At most {settings.PUBMED_MAX_COUNT} articles a query.")
        return count


class UrlsForm(forms.Form):
    urls = TextField(label="Web pages (one URL a line)", max_length=50_000, widget=forms.Textarea(attrs={"rows": 4}))
    schedule = forms.ChoiceField(label="Re-check", choices=Schedule.choices, initial=Schedule.OFF, required=False)


class ScheduleForm(forms.Form):
    schedule = forms.ChoiceField(choices=Schedule.choices)
