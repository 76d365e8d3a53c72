from __future__ import annotations

from apps.workspaces.selectors import membership_list_for_user


def workspace_switcher(request) -> dict:
    """The signed-in user's workspaces, for the switcher in the header."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"switcher_memberships": membership_list_for_user(user=user)}
