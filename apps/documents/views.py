from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.documents import services
from apps.documents.forms import UploadForm
from apps.documents.selectors import document_list, upload_batch_progress
from apps.workspaces.tenancy import workspace_view


@workspace_view()
def documents(request):
    """The Documents page; its #document-table fragment is what htmx polls while ingestion runs."""
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        _upload_all(request, form)
        if not form.errors:
            return redirect("documents", slug=request.workspace.slug)
    docs = list(document_list(workspace=request.workspace))
    # One progress for each upload of several files still being ingested, above the table.
    batches = [b for b in upload_batch_progress(workspace=request.workspace) if b.files > 1]
    context = {"form": form, "documents": docs, "batches": batches, "pending": any(not d.settled for d in docs)}
    template = "documents/list.html#document-table" if request.htmx else "documents/list.html"
    return render(request, template, context, status=_status(form))


@require_POST
@workspace_view()
def document_delete(request, document_id):
    services.document_delete(workspace=request.workspace, actor=request.membership, document_id=document_id)
    messages.success(request, "Document deleted, with its chunks and its file.")
    return redirect("documents", slug=request.workspace.slug)


@require_POST
@workspace_view()
def document_reindex(request, document_id):
    count = services.document_reindex(workspace=request.workspace, actor=request.membership, document_id=document_id)
    messages.success(request, "Re-indexing started." if count else "That document is still being ingested; it was left alone.")
    return redirect("documents", slug=request.workspace.slug)


@require_POST
@workspace_view(write="reindex_all")
def documents_reindex_all(request):
    count = services.document_reindex(workspace=request.workspace, actor=request.membership)
    messages.success(request, f"Re-indexing {count} document(s) with the workspace's current chunking settings.")
    return redirect("documents", slug=request.workspace.slug)


def _upload_all(request, form: UploadForm) -> None:
    """Each file stands alone: one bad file is reported and the others still go in; those added
    are ingested together (services.documents_upload)."""
    _, outcomes = services.documents_upload(workspace=request.workspace, actor=request.membership, uploads=form.cleaned_data["files"])
    for outcome in outcomes:
        if outcome.error is not None:
            form.add_error("files", outcome.error.message)
            form.too_large = getattr(form, "too_large", False) or outcome.error.status == 413
        elif outcome.created:
            messages.success(request, f"“{outcome.document.filename}” uploaded; ingestion has started.")
        else:
            messages.info(request, f"“{outcome.name}” is already here as “{outcome.document.filename}”; nothing was added.")


def _status(form: UploadForm) -> int:
    if not form.errors:
        return 200
    return 413 if getattr(form, "too_large", False) else 400
