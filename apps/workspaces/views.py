from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from apps.core.errors import ApplicationError
from apps.core.views import call_service
from apps.workspaces import services
from apps.workspaces.forms import MemberInviteForm, MemberRoleForm, ProvidersForm, WorkspaceCreateForm, WorkspaceSettingsForm
from apps.workspaces.models import Role
from apps.workspaces.selectors import (
    invitation_list,
    invitation_list_for_user,
    membership_list,
    membership_list_for_user,
    provider_specs_get,
    settings_get,
)
from apps.workspaces.tenancy import workspace_view


@login_required
def workspace_list(request):
    form = WorkspaceCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        workspace = call_service(form, services.workspace_create, owner=request.user, **form.cleaned_data)
        if workspace is not None:
            messages.success(request, f"Workspace “{workspace.name}” created; you are its owner.")
            return redirect("ask", slug=workspace.slug)
    context = {
        "memberships": membership_list_for_user(user=request.user),
        "invitations": invitation_list_for_user(user=request.user),
        "form": form,
    }
    return render(request, "workspaces/list.html", context, status=400 if form.errors else 200)


@require_POST
@login_required
def invitation_accept(request, invitation_id):
    """The invited person joins, and lands in the workspace; 404 for an invitation not theirs."""
    try:
        membership = services.invitation_accept(user=request.user, invitation_id=invitation_id)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("workspace_list")
    messages.success(request, f"You joined {membership.workspace.name} as {membership.get_role_display().lower()}.")
    return redirect("ask", slug=membership.workspace.slug)


@require_POST
@login_required
def invitation_decline(request, invitation_id):
    invitation = services.invitation_decline(user=request.user, invitation_id=invitation_id)
    messages.success(request, f"You declined the invitation to {invitation.workspace.name}.")
    return redirect("workspace_list")


@require_POST
@workspace_view(write="leave")
def workspace_leave(request):
    try:
        services.membership_leave(workspace=request.workspace, actor=request.membership)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"You left {request.workspace.name}.")
    return redirect("workspace_list")


@require_safe
@workspace_view()
def workspace_home(request):
    return redirect("ask", slug=request.workspace.slug)


@workspace_view(read="manage_members", write="manage_members")
def members(request):
    """Who is in the workspace, with their e-mail addresses, and who is invited: for admins and
    owners, as in the API. Inviting answers the same whether or not anyone holds the identifier."""
    form = MemberInviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        invited = call_service(form, services.invitation_create, workspace=request.workspace, actor=request.membership, **form.cleaned_data)
        if invited is not None:
            role = invited.get_role_display().lower()
            messages.success(request, f"Invitation for “{invited.identifier}” sent: they join as {role} when they accept it.")
            return redirect("members", slug=request.workspace.slug)
    context = {
        "form": form,
        "members": membership_list(workspace=request.workspace),
        "invitations": invitation_list(workspace=request.workspace),
        "roles": Role.choices,
    }
    return render(request, "workspaces/members.html", context, status=400 if form.errors else 200)


@require_POST
@workspace_view(write="manage_members")
def member_role(request, membership_id):
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a valid role.")
    else:
        _run_member_action(
            request, services.membership_change_role, membership_id=membership_id, role=form.cleaned_data["role"], done="Role changed."
        )
    return redirect("members", slug=request.workspace.slug)


@require_POST
@workspace_view(write="manage_members")
def member_remove(request, membership_id):
    _run_member_action(request, services.membership_remove, membership_id=membership_id, done="Member removed.")
    return redirect("members", slug=request.workspace.slug)


@require_POST
@workspace_view(write="manage_members")
def invitation_revoke(request, invitation_id):
    _run_member_action(request, services.invitation_revoke, invitation_id=invitation_id, done="Invitation revoked.")
    return redirect("members", slug=request.workspace.slug)


def _run_member_action(request, service, *, done: str, **kwargs) -> None:
    try:
        service(workspace=request.workspace, actor=request.membership, **kwargs)
    except ApplicationError as exc:
        if exc.status == 403:
            raise PermissionDenied(exc.message) from None
        messages.error(request, exc.message)
    else:
        messages.success(request, done)


@workspace_view(write="manage_settings")
def workspace_settings(request):
    """Owners and admins change the pipeline settings; everyone else sees them read-only."""
    options = settings_get(workspace=request.workspace)
    form = WorkspaceSettingsForm(request.POST or None, options=options, read_only=not request.membership.can_manage)
    if request.method == "POST" and form.is_valid():
        changes = form.changes()
        saved = call_service(form, services.settings_update, workspace=request.workspace, actor=request.membership, changes=changes)
        if saved is not None:
            messages.success(request, "Settings saved." if changes else "Nothing to save: no value was changed.")
            return redirect("workspace_settings", slug=request.workspace.slug)
    # The change history (audits) and the re-index notice (documents) come from their apps'
    # template tags: this app sits below both and imports neither.
    return render(request, "workspaces/settings.html", {"form": form}, status=400 if form.errors else 200)


@workspace_view(read="manage_settings", write="manage_settings")
def providers(request):
    options = settings_get(workspace=request.workspace)
    form = ProvidersForm(request.POST or None, initial={"provider_order": options.provider_order.replace(",", ", ")})
    if request.method == "POST" and form.is_valid():
        saved = call_service(
            form, services.settings_providers_update, workspace=request.workspace, actor=request.membership, **form.service_kwargs()
        )
        if saved is not None:
            messages.success(request, "Provider settings saved.")
            return redirect("providers", slug=request.workspace.slug)
    context = {"form": form, "options": options, "specs": provider_specs_get(options=options)}
    return render(request, "workspaces/providers.html", context, status=400 if form.errors else 200)
