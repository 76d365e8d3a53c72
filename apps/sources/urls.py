from __future__ import annotations

from django.urls import path

from apps.sources import views

urlpatterns = [
    path("", views.sources, name="sources"),
    path("<uuid:source_id>/check/", views.source_check, name="source_check"),
    path("<uuid:source_id>/delete/", views.source_delete, name="source_delete"),
    path("<uuid:source_id>/schedule/", views.source_schedule, name="source_schedule"),
]
