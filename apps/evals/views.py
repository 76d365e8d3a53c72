from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from apps.core.errors import ApplicationError
from apps.core.views import call_service
from apps.evals import services
from apps.evals.forms import EvalSetUploadForm
from apps.evals.selectors import (
    access_eval_run,
    access_eval_set,
    eval_question_list,
    eval_result_rows,
    eval_run_chart,
    eval_run_list,
    eval_run_report,
    eval_set_list,
)
from apps.workspaces.tenancy import workspace_view


@workspace_view()
def evaluations(request):
    """Evaluation sets (upload, list) and the latest runs."""
    form = EvalSetUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        eval_set = call_service(
            form,
            services.eval_set_create,
            workspace=request.workspace,
            actor=request.membership,
            filename=upload.name,
            data=upload.read(),
            name=form.cleaned_data["name"],
        )
        if eval_set is not None:
            messages.success(request, f"Evaluation set “{eval_set.name}” added with {eval_set.question_count} questions.")
            return redirect("eval_set", slug=request.workspace.slug, set_id=eval_set.pk)
    context = {"form": form, "sets": eval_set_list(workspace=request.workspace), "runs": eval_run_list(workspace=request.workspace)[:10]}
    return render(request, "evals/list.html", context, status=400 if form.errors else 200)


@require_safe
@workspace_view()
def eval_set(request, set_id):
    chosen = access_eval_set(request.workspace, set_id)
    context = {
        "eval_set": chosen,
        "questions": eval_question_list(workspace=request.workspace, eval_set=chosen),
        "runs": eval_run_list(workspace=request.workspace, eval_set=chosen),
    }
    return render(request, "evals/set.html", context)


@require_POST
@workspace_view()
def eval_set_delete(request, set_id):
    services.eval_set_delete(workspace=request.workspace, actor=request.membership, set_id=set_id)
    messages.success(request, "Evaluation set deleted, with its runs.")
    return redirect("evaluations", slug=request.workspace.slug)


@require_POST
@workspace_view()
def eval_run_start(request, set_id):
    run = services.eval_run_create(workspace=request.workspace, actor=request.membership, set_id=set_id)
    return redirect("eval_run", slug=request.workspace.slug, run_id=run.pk)


@require_safe
@workspace_view()
def eval_run(request, run_id):
    """A run's progress (htmx polls the #run-body fragment until it settles), then its metrics,
    the sweep chart, the recommendation and every question's two answers."""
    run = access_eval_run(request.workspace, run_id)
    context = {"run": run}
    if run.settled:
        report = eval_run_report(run)
        context |= {"report": report, "chart": eval_run_chart(run, report), "rows": eval_result_rows(run)}
    template = "evals/run.html#run-body" if request.htmx else "evals/run.html"
    return render(request, template, context)


@require_POST
@workspace_view(write="apply_evaluation")
def eval_run_apply(request, run_id):
    try:
        applied = services.eval_run_apply(workspace=request.workspace, actor=request.membership, run_id=run_id)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        changes = ", ".join(f"{name} {value:g}" for name, value in applied.items())
        messages.success(request, f"Applied to the workspace's settings: {changes}.")
    return redirect("eval_run", slug=request.workspace.slug, run_id=run_id)
