from __future__ import annotations

from django.contrib.auth import get_user_model

from apps.workspaces.selectors import membership_list_for_user


def workspace_switcher(request) -> dict:
    """The signed-in person's workspaces, for the switcher in the header. A page rendered for a
    call made with an API key (the API docs, say) has no person behind it, and no switcher."""
    user = getattr(request, "user", None)
    if not isinstance(user, get_user_model()) or not user.is_authenticated:
        return {}
    return {"switcher_memberships": membership_list_for_user(user=user)}
