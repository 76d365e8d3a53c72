from __future__ import annotations

from django.urls import path

from apps.evals import views

urlpatterns = [
    path("", views.evaluations, name="evaluations"),
    path("sets/<uuid:set_id>/", views.eval_set, name="eval_set"),
    path("sets/<uuid:set_id>/delete/", views.eval_set_delete, name="eval_set_delete"),
    path("sets/<uuid:set_id>/run/", views.eval_run_start, name="eval_run_start"),
    path("runs/<uuid:run_id>/", views.eval_run, name="eval_run"),
    path("runs/<uuid:run_id>/apply/", views.eval_run_apply, name="eval_run_apply"),
]
