from __future__ import annotations

from django.conf import settings
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from apps.core.api import WorkspaceAPIView
from apps.core.errors import ApplicationError
from apps.documents import services
from apps.documents.models import Document
from apps.documents.selectors import access_document, document_list
from apps.workspaces.models import Role


class DocumentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Document
        fields = [
            "id",
            "title",
            "filename",
            "kind",
            "size_bytes",
            "sha256",
            "status",
            "error",
            "page_count",
            "chunk_count",
            "progress_done",
            "progress_total",
            "created_at",
        ]
        read_only_fields = fields


class DocumentListCreateAPI(WorkspaceAPIView):
    serializer_class = DocumentSerializer
    parser_classes = [MultiPartParser]

    def get_queryset(self):
        return document_list(workspace=self.request.workspace)

    def get(self, request, workspace_id):
        return self.list(request)

    def post(self, request, workspace_id):
        files = request.FILES.getlist("files")
        if not files:
            raise ApplicationError("Send one or more files as multipart form field “files”.", field="files")
        if len(files) > settings.UPLOAD_MAX_FILES:
            raise ApplicationError(f"Upload at most {settings.UPLOAD_MAX_FILES} files at once.", field="files")
        results = [self._create_one(request, upload) for upload in files]
        return Response({"results": results}, status=_upload_status(results))

    def _create_one(self, request, upload) -> dict:
        try:
            document, created = services.document_create_from_upload(workspace=request.workspace, actor=request.user, upload=upload)
        except ApplicationError as exc:
            return {"filename": upload.name, "error": {"code": exc.code, "message": exc.message}}
        return {"filename": upload.name, "created": created, "document": DocumentSerializer(document).data}


def _upload_status(results: list[dict]) -> int:
    """201 when something was added, 200 when all were already there, 4xx when every file failed."""
    errors = [r["error"]["code"] for r in results if "error" in r]
    if len(errors) < len(results):
        return status.HTTP_201_CREATED if any(r.get("created") for r in results) else status.HTTP_200_OK
    return status.HTTP_413_REQUEST_ENTITY_TOO_LARGE if set(errors) == {"too_large"} else status.HTTP_400_BAD_REQUEST


class DocumentDetailAPI(WorkspaceAPIView):
    serializer_class = DocumentSerializer

    def get(self, request, workspace_id, document_id):
        return Response(DocumentSerializer(access_document(request.workspace, document_id)).data)

    def delete(self, request, workspace_id, document_id):
        services.document_delete(workspace=request.workspace, actor=request.user, document_id=document_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentReindexAPI(WorkspaceAPIView):
    """POST: queue one settled document for ingestion again."""

    def post(self, request, workspace_id, document_id):
        count = services.document_reindex(workspace=request.workspace, actor=request.user, document_id=document_id)
        return Response({"queued": count}, status=status.HTTP_202_ACCEPTED)


class WorkspaceReindexAPI(WorkspaceAPIView):
    """POST: queue every settled document of the workspace (admins and owners)."""

    write_role = Role.ADMIN

    def post(self, request, workspace_id):
        count = services.document_reindex(workspace=request.workspace, actor=request.user)
        return Response({"queued": count}, status=status.HTTP_202_ACCEPTED)
