from __future__ import annotations

from django import forms

from apps.core.forms import TextField
from apps.pipeline.judging.selective import LOCAL_JUDGE_NAME, unsure_share
from apps.workspaces.models import Role, WorkspaceSettings
from apps.workspaces.services import SETTINGS


class WorkspaceCreateForm(forms.Form):
    name = TextField(max_length=120, one_line=True, label="Name")
    slug = forms.SlugField(max_length=60, required=False, help_text="Used in the address; made from the name when empty.")


class MemberInviteForm(forms.Form):
    identifier = TextField(label="Username or e-mail", max_length=254, one_line=True)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class WorkspaceSettingsForm(forms.Form):
    """Every pipeline setting, in groups, starting from the workspace's values. It parses
    numbers; ranges and the rules between values are the service's (one set of messages for
    the page and the API)."""

    GROUPS = (
        (
            "Confidence gate",
            "Verified mode answers only when the best passage is relevant enough and seems to answer the question.",
            ("gate_threshold",),
        ),
        (
            "Corrective RAG",
            "How retrieval is judged Correct, Ambiguous or Incorrect, and what is kept.",
            ("crag_upper", "crag_lower", "strip_threshold", "web_search_enabled", "web_results"),
        ),
        (
            "Retrieval",
            "Candidates from each leg, their fusion, and how many go on after reranking.",
            ("dense_k", "keyword_k", "rrf_k", "dense_weight", "keyword_weight", "rerank_top_n"),
        ),
        ("Answer and verification", "", ("answer_max_claims", "locator_threshold", "judge_target_precision")),
        (
            "Trust score",
            "Confidence is the weighted mean of retrieval, source agreement and grounding; the cut-offs turn it into a risk label.",
            ("trust_weight_retrieval", "trust_weight_agreement", "trust_weight_grounding", "risk_low_cutoff", "risk_medium_cutoff"),
        ),
        (
            "Chunking",
            "Applies to documents indexed after the change: re-index the existing ones to apply it to them.",
            ("chunk_size", "chunk_overlap"),
        ),
        ("Scanned documents", "PDF pages without a text layer are read by OCR (Tesseract) in this language.", ("ocr_language",)),
        (
            "Limits per document",
            "What one document may cost to index; a larger one fails with a message saying which limit it passed.",
            ("max_document_chunks", "max_sheet_cells"),
        ),
    )

    def __init__(self, data=None, *, options: WorkspaceSettings, read_only: bool = False):
        super().__init__(data, initial={name: getattr(options, name) for name in SETTINGS}, label_suffix="")
        for name, setting in SETTINGS.items():
            self.fields[name] = _field(setting)
            self.fields[name].disabled = read_only
        self.fields["judge_target_precision"].help_text += _target_meaning(options.judge_target_precision)

    def groups(self):
        """(title, description, bound fields) for each fieldset of the page."""
        return [(title, text, [self[name] for name in names]) for title, text, names in self.GROUPS]

    def changes(self) -> dict:
        return {name: self.cleaned_data[name] for name in self.changed_data}


def _field(setting) -> forms.Field:
    if setting.kind is bool:
        return forms.BooleanField(required=False, label=setting.label, help_text=setting.help)
    if setting.kind is str:
        return TextField(max_length=60, one_line=True, label=setting.label, help_text=setting.help)
    step = "1" if setting.kind is int else "any"
    field_class = forms.IntegerField if setting.kind is int else forms.FloatField
    widget = forms.NumberInput(attrs={"step": step})
    return field_class(label=setting.label, help_text=setting.help, widget=widget)


class ProvidersForm(forms.Form):
    provider_order = TextField(
        required=False,
        max_length=60,
        one_line=True,
        label="Provider order",
        help_text="Comma-separated, e.g. “zhipuai, groq”. Local always answers last. Empty: every provider with a key, Groq first.",
    )
    groq_api_key = TextField(
        required=False,
        max_length=300,
        one_line=True,
        label="Groq API key",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    clear_groq = forms.BooleanField(required=False, label="Remove the workspace's Groq key")
    zhipuai_api_key = TextField(
        required=False,
        max_length=300,
        one_line=True,
        label="ZhipuAI API key",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    clear_zhipuai = forms.BooleanField(required=False, label="Remove the workspace's ZhipuAI key")

    def service_kwargs(self) -> dict:
        data = self.cleaned_data
        return {
            "provider_order": data["provider_order"].split(","),
            "keys": {"groq": data["groq_api_key"], "zhipuai": data["zhipuai_api_key"]},
            "clear": {name for name in ("groq", "zhipuai") if data[f"clear_{name}"]},
        }


def _target_meaning(target: float) -> str:
    """What the target does with the product's local judge, on the claims it was calibrated on."""
    share = unsure_share(LOCAL_JUDGE_NAME, target)
    if share is None:
        return ""
    return f" At {target:.2f}, {share:.0%} of the development claims (SciFact, HealthVer) would be unsure."
