from __future__ import annotations

from django.db.models import F, QuerySet

from apps.apikeys.models import ApiKey
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access


def apikey_list(*, workspace: Workspace) -> QuerySet[ApiKey]:
    """Active keys first, newest first; revoked ones after, most recently revoked first."""
    return (
        ApiKey.objects.filter(workspace=workspace)
        .select_related("created_by")
        .order_by(F("revoked_at").desc(nulls_first=True), "-created_at")
    )


def access_apikey(workspace: Workspace, key_id) -> ApiKey:
    return access(ApiKey, workspace, key_id, ApiKey.objects.select_related("created_by"))
