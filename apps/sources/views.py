from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.core.errors import ApplicationError
from apps.core.views import call_service
from apps.sources import services
from apps.sources.forms import PubMedForm, ScheduleForm, UrlsForm
from apps.sources.models import Schedule, SourceKind
from apps.sources.selectors import source_list
from apps.workspaces.tenancy import workspace_view


@workspace_view()
def sources(request):
    """The Sources page: import a PubMed query or web pages; its #source-table fragment is what
    htmx polls while a check runs."""
    kind = request.POST.get("kind") if request.method == "POST" else None
    pubmed = PubMedForm(request.POST if kind == "pubmed" else None, prefix="pubmed")
    pages = UrlsForm(request.POST if request.method == "POST" and kind != "pubmed" else None, prefix="url")
    form = pubmed if kind == "pubmed" else pages
    if request.method == "POST" and kind not in SourceKind.values:
        form.is_valid()
        form.add_error(None, "Choose what to import: a PubMed query or web pages.")
    elif request.method == "POST" and form.is_valid() and _import(request, kind, form):
        return redirect("sources", slug=request.workspace.slug)
    rows = list(source_list(workspace=request.workspace))
    context = {"pubmed_form": pubmed, "urls_form": pages, "sources": rows, "pending": any(not s.settled for s in rows)}
    context["schedules"] = Schedule.choices
    template = "sources/list.html#source-table" if request.htmx else "sources/list.html"
    status = 400 if request.method == "POST" else 200
    return render(request, template, context, status=status)


def _import(request, kind: str, form) -> bool:
    data = form.cleaned_data
    common = {"workspace": request.workspace, "actor": request.membership, "schedule": data.get("schedule") or Schedule.OFF}
    if kind == "pubmed":
        done = call_service(form, services.source_pubmed_create, **common, query=data["query"], max_count=data["max_count"])
        done = [done] if done else None
    else:
        done = call_service(form, services.source_urls_create, **common, urls=data["urls"].splitlines())
    if done is None:
        return False
    added = sum(created for _, created in done)
    messages.success(request, f"{added} source(s) added, {len(done) - added} checked again; the import runs in the background.")
    return True


@require_POST
@workspace_view()
def source_check(request, source_id):
    _act(request, "A re-check has started.", services.source_check, source_id=source_id)
    return redirect("sources", slug=request.workspace.slug)


@require_POST
@workspace_view()
def source_delete(request, source_id):
    _act(request, "Source deleted, with the documents it brought in.", services.source_delete, source_id=source_id)
    return redirect("sources", slug=request.workspace.slug)


@require_POST
@workspace_view(write="schedule_sources")
def source_schedule(request, source_id):
    form = ScheduleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose off, daily or weekly.")
    else:
        _act(request, "Schedule saved.", services.source_schedule, source_id=source_id, schedule=form.cleaned_data["schedule"])
    return redirect("sources", slug=request.workspace.slug)


def _act(request, done: str, service, **kwargs) -> None:
    """A button's service; its ApplicationError (a check already running) becomes the page's message."""
    try:
        service(workspace=request.workspace, actor=request.membership, **kwargs)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return
    messages.success(request, done)
