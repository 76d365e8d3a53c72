from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from apps.apikeys.forms import ApiKeyForm
from apps.apikeys.selectors import apikey_list
from apps.apikeys.services import apikey_create, apikey_revoke
from apps.core.views import call_service
from apps.workspaces.tenancy import workspace_view


@never_cache  # the page that shows a new key must not stay in any cache
@workspace_view(read="manage_keys", write="manage_keys")
def api_keys(request):
    form = ApiKeyForm(request.POST or None)
    new_key, secret = None, None
    if request.method == "POST" and form.is_valid():
        created = call_service(form, apikey_create, workspace=request.workspace, actor=request.membership, **form.cleaned_data)
        if created is not None:
            (new_key, secret), form = created, ApiKeyForm()
    context = {"form": form, "keys": apikey_list(workspace=request.workspace), "new_key": new_key, "secret": secret}
    return render(request, "apikeys/list.html", context, status=400 if form.errors else 200)


@require_POST
@workspace_view(read="manage_keys", write="manage_keys")
def api_key_revoke(request, key_id):
    key = apikey_revoke(workspace=request.workspace, actor=request.membership, key_id=key_id)
    messages.success(request, f"Key {key.prefix} ({key.name}) revoked: it no longer works.")
    return redirect("api_keys_page", slug=request.workspace.slug)
