from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from apps.core import views as core_views
from apps.documents import api as documents_api
from apps.queries import api as queries_api

api_v1 = [
    path("schema/", SpectacularAPIView.as_view(), name="api_schema"),
    path("workspaces/<uuid:workspace_id>/queries/", queries_api.QueryListCreateAPI.as_view(), name="api_queries"),
    path("workspaces/<uuid:workspace_id>/queries/<uuid:run_id>/", queries_api.QueryDetailAPI.as_view(), name="api_query"),
    path("workspaces/<uuid:workspace_id>/documents/", documents_api.DocumentListCreateAPI.as_view(), name="api_documents"),
    path("workspaces/<uuid:workspace_id>/documents/<uuid:document_id>/", documents_api.DocumentDetailAPI.as_view(), name="api_document"),
    path(
        "workspaces/<uuid:workspace_id>/documents/<uuid:document_id>/reindex/",
        documents_api.DocumentReindexAPI.as_view(),
        name="api_document_reindex",
    ),
    path("workspaces/<uuid:workspace_id>/documents/reindex/", documents_api.WorkspaceReindexAPI.as_view(), name="api_documents_reindex"),
]

urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    path("w/", include("apps.workspaces.urls")),
    path("w/<slug:slug>/documents/", include("apps.documents.urls")),
    path("w/<slug:slug>/audit/", include("apps.audits.urls")),
    path("w/<slug:slug>/", include("apps.queries.urls")),
]
