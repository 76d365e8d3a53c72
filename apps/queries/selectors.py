from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from apps.audits.models import AuditRecord
from apps.queries.models import QueryRun
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access


def query_run_list(*, workspace: Workspace, include_evaluation: bool = False) -> QuerySet[QueryRun]:
    """The workspace's runs, each with `audit_record_id` (its answer's audit record, or None)
    read in the same query."""
    runs = _with_audit_record_id(QueryRun.objects.filter(workspace=workspace).select_related("asked_by"))
    return runs if include_evaluation else runs.filter(evaluation=False)


def access_query_run(workspace: Workspace, run_id) -> QueryRun:
    return access(QueryRun, workspace, run_id, _with_audit_record_id(QueryRun.objects.select_related("asked_by")))


def _with_audit_record_id(runs: QuerySet[QueryRun]) -> QuerySet[QueryRun]:
    records = AuditRecord.objects.filter(workspace_id=OuterRef("workspace_id"), query_run_id=OuterRef("pk")).values("pk")[:1]
    return runs.annotate(audit_record_id=Subquery(records))


WHO_REFUSED = {
    "gate": "the confidence gate, before any answer was generated",
    "corrective": "the corrective step: no passage was relevant enough to keep",
    "provider": "the provider, which found nothing in the passages that answers",
}


def query_run_refusal(run: QueryRun, record: AuditRecord | None = None) -> dict | None:
    """Who refused a settled run and on what evidence (see apps.pipeline.answer.Refusal), or None
    for an answer. Runs answered before refusals were recorded are read from their gate and
    their audit record the same way."""
    if not run.settled or not run.insufficient:
        return None
    refusal = run.refusal or _refusal_of_an_older_run(run, record)
    return refusal | {"who": WHO_REFUSED.get(refusal["by"], refusal["by"])}


def _refusal_of_an_older_run(run: QueryRun, record: AuditRecord | None) -> dict:
    gate = run.gate or {}
    evidence = {"relevance": gate.get("relevance"), "answerability": gate.get("answerability"), "provider": None}
    if gate.get("passed") is not False:
        threshold = gate.get("threshold") if gate.get("enabled") else None
        name = "the gate threshold (passed)" if threshold is not None else ""
        return {
            "by": "provider",
            "reason": run.answer,
            **evidence,
            "provider": run.provider,
            "score": gate.get("top_score"),
            "threshold": threshold,
            "threshold_name": name,
        }
    if gate.get("top_score") is not None:
        return {
            "by": "gate",
            "reason": gate.get("reason", ""),
            **evidence,
            "score": gate["top_score"],
            "threshold": gate.get("threshold"),
            "threshold_name": "the gate threshold",
        }
    trace = record.payload if record else {}
    scores = [s["score"] for s in trace.get("rerank", {}).get("scores", [])]
    lower = trace.get("corrective", {}).get("params", {}).get("lower")
    if scores:
        best = max(scores)
        return {
            "by": "corrective",
            "reason": gate.get("reason", ""),
            **evidence,
            "relevance": best,
            "score": best,
            "threshold": lower,
            "threshold_name": "the lower corrective threshold",
        }
    return {
        "by": "gate",
        "reason": gate.get("reason", ""),
        **evidence,
        "score": None,
        "threshold": gate.get("threshold"),
        "threshold_name": "the gate threshold",
    }
