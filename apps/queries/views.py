from __future__ import annotations

from django.shortcuts import redirect, render

from apps.audits.selectors import audit_record_for_run
from apps.core.tenancy import workspace_view
from apps.core.views import call_service
from apps.queries.forms import AskForm
from apps.queries.selectors import access_query_run, query_run_list
from apps.queries.services import query_run_enqueue


@workspace_view()
def ask(request):
    form = AskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        run = call_service(form, query_run_enqueue, workspace=request.workspace, actor=request.user, **form.cleaned_data)
        if run is not None:
            return redirect("answer", slug=request.workspace.slug, run_id=run.pk)
    recent = query_run_list(workspace=request.workspace)[:10]
    return render(request, "queries/ask.html", {"form": form, "recent": recent}, status=400 if form.errors else 200)


@workspace_view()
def answer(request, run_id):
    run = access_query_run(request.workspace, run_id)
    record = audit_record_for_run(workspace=request.workspace, query_run_id=run.pk)
    template = "queries/answer.html#run" if request.htmx else "queries/answer.html"
    return render(request, template, {"run": run, "record": record})
