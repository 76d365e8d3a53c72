from __future__ import annotations

from django.urls import path

from apps.queries import views

urlpatterns = [
    path("ask/", views.ask, name="ask"),
    path("answers/<uuid:run_id>/", views.answer, name="answer"),
    path("answers/<uuid:run_id>/reverify/", views.answer_reverify, name="answer_reverify"),
]
