from __future__ import annotations

from django.conf import settings
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from apps.core.api import WorkspaceAPIView
from apps.core.errors import ApplicationError
from apps.documents.models import Document
from apps.documents.selectors import access_document, document_list
from apps.documents.services import document_create


class DocumentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Document
        fields = ["id", "title", "filename", "size_bytes", "sha256", "status", "error", "chunk_count", "created_at"]
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
        created = any(r.get("created") for r in results)
        failed = all("error" in r for r in results)
        return Response(
            {"results": results},
            status=status.HTTP_400_BAD_REQUEST if failed else status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    def _create_one(self, request, upload) -> dict:
        try:
            document, created = document_create(workspace=request.workspace, actor=request.user, filename=upload.name, data=upload.read())
        except ApplicationError as exc:
            return {"filename": upload.name, "error": {"code": exc.code, "message": exc.message}}
        return {"filename": upload.name, "created": created, "document": DocumentSerializer(document).data}


class DocumentDetailAPI(WorkspaceAPIView):
    serializer_class = DocumentSerializer

    def get(self, request, workspace_id, document_id):
        return Response(DocumentSerializer(access_document(request.workspace, document_id)).data)
