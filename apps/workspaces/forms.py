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
