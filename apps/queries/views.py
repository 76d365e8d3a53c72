from __future__ import annotations

from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from apps.audits.selectors import audit_record_for_run, claim_passages
from apps.core.views import call_service
from apps.queries.forms import AskForm
from apps.queries.selectors import access_query_run, query_run_list
from apps.queries.services import query_run_enqueue
from apps.workspaces.selectors import settings_get
from apps.workspaces.tenancy import workspace_view


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
    context = {
        "run": run,
        "record": record,
        "claims": claim_passages(claims=run.claims, sources=run.sources),
        "selected": _selected_claim(request, len(run.claims)),
        # The weights and cut-offs this answer was scored with, not today's settings.
        "scoring": _scoring(record, request.workspace),
        "refusal": _refusal(run, record),
    }
    template = "queries/answer.html#run" if request.htmx else "queries/answer.html"
    return render(request, template, context)


def _selected_claim(request, count: int) -> int:
    chosen = request.GET.get("claim", "")
    return int(chosen) if chosen.isdigit() and 1 <= int(chosen) <= count else 1


def _refusal(run, record) -> dict | None:
    """For a refusal by the gate: the gate's score and the threshold it fell short of
    (the gate's own, or corrective RAG's lower one when no passage was left to gate)."""
    if not run.insufficient or not run.gate.get("enabled") or run.gate.get("passed"):
        return None
    if run.gate.get("top_score") is not None:
        label = "Gate score (the weaker of relevance and answerability)" if run.gate.get("answerability") is not None else "Best passage"
        return {"top": run.gate["top_score"], "threshold": run.gate["threshold"], "name": "the gate threshold", "label": label}
    trace = record.payload if record else {}
    scores = [s["score"] for s in trace.get("rerank", {}).get("scores", [])]
    lower = trace.get("corrective", {}).get("params", {}).get("lower")
    if not scores or lower is None:
        return None
    return {"top": max(scores), "threshold": lower, "name": "the lower corrective threshold", "label": "Best passage"}


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
