from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from apps.audits import services
from apps.audits.forms import AuditFilterForm
from apps.audits.selectors import access_audit_record, audit_event_list, audit_record_link_ok, audit_record_list, claim_passages
from apps.core.errors import ApplicationError
from apps.workspaces.tenancy import workspace_view

PAGE_SIZE = 25


@require_safe
@workspace_view()
def audit_list(request):
    """The audit history; its #results fragment is what the filters re-fetch with htmx."""
    form = AuditFilterForm(request.GET)
    page = None
    if form.is_valid():
        records = audit_record_list(workspace=request.workspace, filters=form.filters())
        page = Paginator(records, PAGE_SIZE).get_page(request.GET.get("page"))
    template = "audits/list.html#results" if request.htmx else "audits/list.html"
    return render(request, template, {"form": form, "page": page}, status=400 if form.errors else 200)


@require_safe
@workspace_view()
def audit_export(request, fmt: str):
    """The filtered history as a CSV or JSON download, streamed row by row; the export itself
    is recorded as an admin event."""
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest("; ".join(e for errors in form.errors.values() for e in errors))
    try:
        pieces = services.audit_export(workspace=request.workspace, actor=request.membership, filters=form.filters(), fmt=fmt)
    except ApplicationError as exc:
        return HttpResponseBadRequest(exc.message)
    return export_response(pieces, request.workspace, fmt)


def export_response(pieces, workspace, fmt: str) -> StreamingHttpResponse:
    """An export's pieces as a streamed download named after the workspace and the time (pages and API)."""
    response = StreamingHttpResponse(pieces, content_type=services.EXPORT_FORMATS[fmt])
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="audit-{workspace.slug}-{stamp}.{fmt}"'
    return response


@require_safe
@workspace_view()
def audit_detail(request, record_id):
    """One answer's whole trace, stage by stage, and whether its link in the chain holds."""
    record = access_audit_record(request.workspace, record_id)
    trace = record.payload
    context = {
        "record": record,
        "trace": trace,
        "link_ok": audit_record_link_ok(record),
        "candidates": _candidate_rows(trace),
        "claims": claim_passages(claims=trace.get("stages", {}).get("verify", {}).get("claims", []), sources=trace.get("sources", [])),
        "refined": _refined_rows(trace),
        "timings": _timings(trace),
        "settings_rows": sorted(_flatten(trace.get("settings", {}))),
    }
    return render(request, "audits/detail.html", context)


@require_safe
@workspace_view()
def audit_events(request):
    """Admin actions: members, settings, documents, exports, keys."""
    page = Paginator(audit_event_list(workspace=request.workspace), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "audits/events.html", {"page": page})


def _candidate_rows(trace: dict) -> list[dict]:
    """The retrieval candidates, best reranked first, with whether corrective RAG kept each
    and whether it became a source of the answer."""
    reranked = {s["chunk_id"]: s for s in trace.get("rerank", {}).get("scores", [])}
    kept = set(trace.get("corrective", {}).get("kept", []))
    used = {s["chunk_id"] for s in trace.get("sources", [])} or {p["chunk_id"] for p in trace.get("corrective", {}).get("pool", [])}
    rows = [
        c | {"rerank": reranked.get(c["chunk_id"], {}).get("score"), "kept": c["chunk_id"] in kept, "used": c["chunk_id"] in used}
        for c in _candidates(trace)
    ]
    return sorted(rows, key=lambda r: -(r["rerank"] if r["rerank"] is not None else -1))


def _refined_rows(trace: dict) -> list[dict]:
    """Corrective RAG's refined passages, named by document and passage number."""
    names = {c["chunk_id"]: f"{c['document_title']}, passage {c['ordinal'] + 1}" for c in _candidates(trace)}
    return [r | {"name": names.get(r["chunk_id"], r["chunk_id"])} for r in trace.get("corrective", {}).get("refined", [])]


# Stages in the order they run (jsonb keeps object keys in its own order).
STAGE_ORDER = ("retrieve", "rerank", "correct", "web_search", "refine", "gate", "generate", "verify", "score")


def _timings(trace: dict) -> list[tuple[str, float]]:
    timings = trace.get("timings_ms", {})
    ranked = sorted(timings, key=lambda name: STAGE_ORDER.index(name) if name in STAGE_ORDER else len(STAGE_ORDER))
    return [(name, timings[name]) for name in ranked]


def _candidates(trace: dict) -> list[dict]:
    return trace.get("stages", {}).get("retrieve", {}).get("candidates", [])


def _flatten(settings: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows = []
    for key, value in settings.items():
        if isinstance(value, dict):
            rows += _flatten(value, f"{prefix}{key}.")
        else:
            rows.append((f"{prefix}{key}", value))
    return rows
