from __future__ import annotations

from django import forms

from apps.apikeys.models import KEY_ROLE_CHOICES
from apps.core.forms import TextField
from apps.workspaces.models import Role


class ApiKeyForm(forms.Form):
    name = TextField(max_length=100, one_line=True, label="Name", help_text="What will use the key, e.g. “CI upload job”.")
    role = forms.ChoiceField(choices=KEY_ROLE_CHOICES, initial=Role.MEMBER, help_text="The key can do what a member with this role can.")
