from __future__ import annotations

from django import forms

from apps.audits.selectors import MODES, RISKS, SORTS, VERDICTS, AuditFilters
from apps.core.forms import TextField

ANY = [("", "any")]
SORT_LABELS = {
    "newest": "newest first",
    "oldest": "oldest first",
    "confidence": "lowest confidence first",
    "-confidence": "highest confidence first",
}


class AuditFilterForm(forms.Form):
    """The audit history's filters from a query string (the page's and the export's)."""

    q = TextField(required=False, max_length=200, one_line=True, label="Question", widget=forms.TextInput(attrs={"type": "search"}))
    risk = forms.ChoiceField(required=False, choices=ANY + [(r, r.capitalize()) for r in RISKS])
    refused = forms.ChoiceField(required=False, choices=[*ANY, ("yes", "refusals only"), ("no", "answers only")], label="Refused")
    source_changed = forms.ChoiceField(
        required=False,
        choices=[*ANY, ("yes", "changed since"), ("no", "unchanged")],
        label="Sources",
        help_text="a cited document deleted or re-indexed",
    )
    mode = forms.ChoiceField(required=False, choices=ANY + [(m, m.capitalize()) for m in MODES])
    verdict = forms.ChoiceField(required=False, choices=ANY + [(v, v.replace("_", " ")) for v in VERDICTS], label="A claim judged")
    actor = TextField(required=False, max_length=200, one_line=True, label="Asked by", help_text="user name or API key label")
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    sort = forms.ChoiceField(required=False, choices=[(key, SORT_LABELS[key]) for key in SORTS], label="Sort")
    evaluation = forms.BooleanField(required=False, label="Include evaluation runs")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, label_suffix="", **kwargs)

    def clean(self):
        data = super().clean()
        if data.get("date_from") and data.get("date_to") and data["date_from"] > data["date_to"]:
            self.add_error("date_to", "The end date is before the start date.")
        return data

    def filters(self) -> AuditFilters:
        data = self.cleaned_data
        refused = {"yes": True, "no": False}.get(data["refused"])
        fields = ("q", "risk", "mode", "verdict", "actor", "date_from", "date_to")
        return AuditFilters(
            refused=refused,
            source_changed={"yes": True, "no": False}.get(data["source_changed"]),
            sort=data["sort"] or "newest",
            include_evaluation=data["evaluation"],
            **{name: data[name] for name in fields},
        )
