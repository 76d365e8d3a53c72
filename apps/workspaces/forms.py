from __future__ import annotations

from django import forms

from apps.workspaces.models import Role


class WorkspaceCreateForm(forms.Form):
    name = forms.CharField(max_length=120)
    slug = forms.SlugField(max_length=60, required=False, help_text="Used in the address; made from the name when empty.")


class MemberAddForm(forms.Form):
    identifier = forms.CharField(label="Username or e-mail", max_length=254)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class ProvidersForm(forms.Form):
    provider_order = forms.CharField(
        required=False,
        max_length=60,
        label="Provider order",
        help_text="Comma-separated, e.g. “zhipuai, groq”. Local always answers last. Empty: every provider with a key, Groq first.",
    )
    groq_api_key = forms.CharField(
        required=False, max_length=300, label="Groq API key", widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"})
    )
    clear_groq = forms.BooleanField(required=False, label="Remove the workspace's Groq key")
    zhipuai_api_key = forms.CharField(
        required=False,
        max_length=300,
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
