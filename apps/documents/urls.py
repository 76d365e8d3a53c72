from __future__ import annotations

from django.urls import path

from apps.documents import views

urlpatterns = [
    path("", views.documents, name="documents"),
    path("reindex/", views.documents_reindex_all, name="documents_reindex_all"),
    path("<uuid:document_id>/delete/", views.document_delete, name="document_delete"),
    path("<uuid:document_id>/reindex/", views.document_reindex, name="document_reindex"),
]
