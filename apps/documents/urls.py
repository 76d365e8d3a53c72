from __future__ import annotations

from django.urls import path

from apps.documents import views

urlpatterns = [path("", views.documents, name="documents")]
