from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from apps.audits.selectors import audit_record_for_run, claim_passages
from apps.core.errors import ApplicationError
from apps.core.views import call_service
from apps.pipeline.citations import marked_parts, place_citations
from apps.queries.forms import AskForm
from apps.queries.selectors import access_query_run, query_run_list, query_run_refusal
from apps.queries.services import query_run_enqueue
from apps.queries.sources import query_run_reverify
from apps.workspaces.selectors import settings_get
from apps.workspaces.tenancy import operation_role, workspace_view


@workspace_view()
def ask(request):
    form = AskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        run = call_service(form, query_run_enqueue, workspace=request.workspace, actor=request.membership, **form.cleaned_data)
        if run is not None:
            return redirect("answer", slug=request.workspace.slug, run_id=run.pk)
    recent = query_run_list(workspace=request.workspace)[:10]
    return render(request, "queries/ask.html", {"form": form, "recent": recent}, status=400 if form.errors else 200)


@require_safe
@workspace_view()
def answer(request, run_id):
    """The answer as it is worked out (htmx polls the #run fragment), then its claims: the
    claim chosen (?claim=N, else the first) shows its quote highlighted in its passage."""
    run = access_query_run(request.workspace, run_id)
    record = audit_record_for_run(workspace=request.workspace, query_run_id=run.pk)
    cited = {c.get("source") for c in run.claims}
    context = {
        "run": run,
        "record": record,
        "answer_parts": marked_parts(run.answer, place_citations(run.answer, run.claims)) if run.settled else [],
        "cited_sources": [s for s in run.sources if s["index"] in cited],
        "also_retrieved": [s for s in run.sources if s["index"] not in cited],
        "reverifications": run.reverifications.order_by("-created_at") if run.settled else [],
        "can_reverify": request.membership.has_role(operation_role("reverify")),
        "claims": claim_passages(claims=run.claims, sources=run.sources),
        "selected": _selected_claim(request, len(run.claims)),
        # The weights and cut-offs this answer was scored with, not today's settings.
        "scoring": _scoring(record, request.workspace),
        "refusal": query_run_refusal(run, record),
    }
    template = "queries/answer.html#run" if request.htmx else "queries/answer.html"
    return render(request, template, context)


@require_POST
@workspace_view(write="reverify")
def answer_reverify(request, run_id):
    """Judge the answer's claims again against the current text: the new run's page."""
    try:
        run = query_run_reverify(workspace=request.workspace, actor=request.membership, run_id=run_id)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("answer", slug=request.workspace.slug, run_id=run_id)
    messages.success(request, "Re-verified against the sources' current text: the new verdicts are below, recorded as a new audit record.")
    return redirect("answer", slug=request.workspace.slug, run_id=run.pk)


def _selected_claim(request, count: int) -> int:
    chosen = request.GET.get("claim", "")
    return int(chosen) if chosen.isdigit() and 1 <= int(chosen) <= count else 1


def _scoring(record, workspace) -> dict:
    snapshot = record.payload.get("settings", {}) if record else {}
    if "risk_cutoffs" not in snapshot or "trust_weights" not in snapshot:
        options = settings_get(workspace=workspace)
        snapshot = {
            "risk_cutoffs": [options.risk_low_cutoff, options.risk_medium_cutoff],
            "trust_weights": [options.trust_weight_retrieval, options.trust_weight_agreement, options.trust_weight_grounding],
        }
    (low, medium), (retrieval, agreement, grounding) = snapshot["risk_cutoffs"], snapshot["trust_weights"]
    return {"low": low, "medium": medium, "retrieval": retrieval, "agreement": agreement, "grounding": grounding}
