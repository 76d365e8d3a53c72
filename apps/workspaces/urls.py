from __future__ import annotations

from django.urls import path

from apps.workspaces import views

urlpatterns = [
    path("", views.workspace_list, name="workspace_list"),
    path("invitations/<uuid:invitation_id>/accept/", views.invitation_accept, name="invitation_accept"),
    path("invitations/<uuid:invitation_id>/decline/", views.invitation_decline, name="invitation_decline"),
    path("<slug:slug>/", views.workspace_home, name="workspace_home"),
    path("<slug:slug>/members/", views.members, name="members"),
    path("<slug:slug>/settings/", views.workspace_settings, name="workspace_settings"),
    path("<slug:slug>/settings/providers/", views.providers, name="providers"),
    path("<slug:slug>/members/<uuid:membership_id>/role/", views.member_role, name="member_role"),
    path("<slug:slug>/members/<uuid:membership_id>/remove/", views.member_remove, name="member_remove"),
    path("<slug:slug>/members/invitations/<uuid:invitation_id>/revoke/", views.invitation_revoke, name="invitation_revoke"),
    path("<slug:slug>/leave/", views.workspace_leave, name="workspace_leave"),
]
