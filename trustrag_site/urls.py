from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from apps.apikeys import api as apikeys_api
from apps.audits import api as audits_api
from apps.core import api as core_api
from apps.core import api_docs
from apps.core import views as core_views
from apps.documents import api as documents_api
from apps.evals import api as evals_api
from apps.queries import api as queries_api
from apps.sources import api as sources_api
from apps.workspaces import api as workspaces_api

workspace_api = [
    path("", workspaces_api.WorkspaceDetailAPI.as_view(), name="api_workspace"),
    path("members/", workspaces_api.MemberListCreateAPI.as_view(), name="api_members"),
    path("members/<uuid:membership_id>/", workspaces_api.MemberDetailAPI.as_view(), name="api_member"),
    path("members/invitations/", workspaces_api.InvitationListAPI.as_view(), name="api_invitations"),
    path("members/invitations/<uuid:invitation_id>/", workspaces_api.InvitationDetailAPI.as_view(), name="api_invitation"),
    path("leave/", workspaces_api.WorkspaceLeaveAPI.as_view(), name="api_workspace_leave"),
    path("settings/", workspaces_api.SettingsAPI.as_view(), name="api_settings"),
    path("audits/", audits_api.AuditListAPI.as_view(), name="api_audits"),
    re_path(r"^audits/export\.(?P<fmt>csv|json)$", audits_api.AuditExportAPI.as_view(), name="api_audits_export"),
    path("audits/<uuid:record_id>/", audits_api.AuditDetailAPI.as_view(), name="api_audit"),
    path("api-keys/", apikeys_api.ApiKeyListCreateAPI.as_view(), name="api_keys"),
    path("api-keys/<uuid:key_id>/", apikeys_api.ApiKeyDetailAPI.as_view(), name="api_key"),
    path("queries/", queries_api.QueryListCreateAPI.as_view(), name="api_queries"),
    path("queries/<uuid:run_id>/", queries_api.QueryDetailAPI.as_view(), name="api_query"),
    path("queries/<uuid:run_id>/reverify/", queries_api.QueryReverifyAPI.as_view(), name="api_query_reverify"),
    path("documents/", documents_api.DocumentListCreateAPI.as_view(), name="api_documents"),
    path("documents/<uuid:document_id>/", documents_api.DocumentDetailAPI.as_view(), name="api_document"),
    path("documents/<uuid:document_id>/reindex/", documents_api.DocumentReindexAPI.as_view(), name="api_document_reindex"),
    path("documents/reindex/", documents_api.WorkspaceReindexAPI.as_view(), name="api_documents_reindex"),
    path("documents/batches/<uuid:batch_id>/", documents_api.UploadBatchAPI.as_view(), name="api_upload_batch"),
    path("sources/", sources_api.SourceListCreateAPI.as_view(), name="api_sources"),
    path("sources/<uuid:source_id>/", sources_api.SourceDetailAPI.as_view(), name="api_source"),
    path("sources/<uuid:source_id>/check/", sources_api.SourceCheckAPI.as_view(), name="api_source_check"),
    path("sources/<uuid:source_id>/schedule/", sources_api.SourceScheduleAPI.as_view(), name="api_source_schedule"),
    path("eval-sets/", evals_api.EvalSetListCreateAPI.as_view(), name="api_eval_sets"),
    path("eval-sets/<uuid:set_id>/", evals_api.EvalSetDetailAPI.as_view(), name="api_eval_set"),
    path("eval-sets/<uuid:set_id>/runs/", evals_api.EvalRunListCreateAPI.as_view(), name="api_eval_runs"),
    path("eval-runs/<uuid:run_id>/", evals_api.EvalRunDetailAPI.as_view(), name="api_eval_run"),
    path("eval-runs/<uuid:run_id>/apply/", evals_api.EvalRunApplyAPI.as_view(), name="api_eval_run_apply"),
]

api_v1 = [
    path("schema/", SpectacularAPIView.as_view(), name="api_schema"),
    path("docs/", api_docs.SwaggerPage.as_view(url_name="api_schema"), name="api_docs"),
    path("redoc/", api_docs.RedocPage.as_view(url_name="api_schema"), name="api_redoc"),
    path("workspaces/", workspaces_api.WorkspaceListCreateAPI.as_view(), name="api_workspaces"),
    path("workspaces/<uuid:workspace_id>/", include(workspace_api)),
    path("invitations/", workspaces_api.MyInvitationListAPI.as_view(), name="api_my_invitations"),
    path("invitations/<uuid:invitation_id>/accept/", workspaces_api.MyInvitationAcceptAPI.as_view(), name="api_my_invitation_accept"),
    path("invitations/<uuid:invitation_id>/decline/", workspaces_api.MyInvitationDeclineAPI.as_view(), name="api_my_invitation_decline"),
    re_path(r"^.*$", core_api.not_found),
]

handler500 = "apps.core.views.server_error"

urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("accounts/login/", core_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    re_path(r"^api/", core_api.not_found),
    path("w/", include("apps.workspaces.urls")),
    path("w/<slug:slug>/api-keys/", include("apps.apikeys.urls")),
    path("w/<slug:slug>/documents/", include("apps.documents.urls")),
    path("w/<slug:slug>/audit/", include("apps.audits.urls")),
    path("w/<slug:slug>/evaluations/", include("apps.evals.urls")),
    path("w/<slug:slug>/sources/", include("apps.sources.urls")),
    path("w/<slug:slug>/", include("apps.queries.urls")),
]
