from __future__ import annotations

from django.urls import path

from apps.audits import views

urlpatterns = [
    path("", views.audit_list, name="audit_list"),
    path("export.<str:fmt>", views.audit_export, name="audit_export"),
    path("events/", views.audit_events, name="audit_events"),
    path("<uuid:record_id>/", views.audit_detail, name="audit_detail"),
]
