from __future__ import annotations

from django.urls import path

from apps.apikeys import views

urlpatterns = [
    path("", views.api_keys, name="api_keys_page"),
    path("<uuid:key_id>/revoke/", views.api_key_revoke, name="api_key_revoke"),
]
