from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from apps.core.errors import ApplicationError
from apps.core.tenancy import workspace_view
from apps.documents.forms import UploadForm
from apps.documents.models import DocumentStatus
from apps.documents.selectors import document_list
from apps.documents.services import document_create


@workspace_view()
def documents(request):
    """The Documents page; its #document-table fragment is what htmx polls while ingestion runs."""
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        _upload_all(request, form)
        if not form.errors:
            return redirect("documents", slug=request.workspace.slug)
    docs = document_list(workspace=request.workspace)
    pending = any(d.status in (DocumentStatus.QUEUED, DocumentStatus.PROCESSING) for d in docs)
    template = "documents/list.html#document-table" if request.htmx else "documents/list.html"
    return render(request, template, {"form": form, "documents": docs, "pending": pending}, status=400 if form.errors else 200)


def _upload_all(request, form: UploadForm) -> None:
    """Each file stands alone: one bad file is reported and the others still go in."""
    for upload in form.cleaned_data["files"]:
        try:
            document, created = document_create(workspace=request.workspace, actor=request.user, filename=upload.name, data=upload.read())
        except ApplicationError as exc:
            form.add_error("files", exc.message)
            continue
        if created:
            messages.success(request, f"“{document.filename}” uploaded; ingestion has started.")
        else:
            messages.info(request, f"“{upload.name}” is already here as “{document.filename}”; nothing was added.")
