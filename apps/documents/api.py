from __future__ import annotations

from django.conf import settings
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from apps.core.api import ErrorSerializer, error_responses
from apps.core.errors import ApplicationError
from apps.documents import services
from apps.documents.models import Document, DocumentKind
from apps.documents.selectors import access_document, document_list, upload_batch_progress
from apps.workspaces import idempotency
from apps.workspaces.api_base import WorkspaceAPIView
from apps.workspaces.idempotency import idempotent


class DocumentSerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(
        choices=DocumentKind.choices, allow_blank=True, read_only=True, help_text="empty until the text is extracted"
    )
    page_count = serializers.IntegerField(read_only=True, help_text="the text's units: pages of a PDF, rows of a spreadsheet, slides")
    ocr_page_count = serializers.IntegerField(read_only=True, help_text="pages of a PDF read by OCR (they had no text layer)")
    contents = serializers.CharField(read_only=True, help_text='"6 pages, 1 read by OCR", "12 rows", "1 slide"; empty for other kinds')

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
            "ocr_page_count",
            "contents",
            "chunk_count",
            "progress_done",
            "progress_total",
            "batch",
            "created_at",
        ]
        read_only_fields = fields


class UploadSerializer(serializers.Serializer):
    files = serializers.ListField(
        child=serializers.FileField(), help_text="one or more PDF, DOCX, HTML, XLSX, CSV, PPTX, TXT or Markdown files"
    )


class FileErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="too_large, unsupported_type, empty…")
    message = serializers.CharField()


class UploadResultSerializer(serializers.Serializer):
    filename = serializers.CharField()
    created = serializers.BooleanField(required=False, help_text="false: the same content was already there; this is that document")
    document = DocumentSerializer(required=False)
    error = FileErrorSerializer(required=False, help_text="this file was refused")


class UploadResponseSerializer(serializers.Serializer):
    batch = serializers.UUIDField(
        allow_null=True,
        required=False,
        help_text="the files added are ingested together as this batch: GET documents/batches/{batch}/ for its progress; "
        "null when nothing was added",
    )
    results = UploadResultSerializer(many=True, help_text="one per file, in the order sent")


class BatchProgressSerializer(serializers.Serializer):
    batch = serializers.UUIDField()
    files = serializers.IntegerField(help_text="files added with this upload")
    ready = serializers.IntegerField(help_text="files indexed and searchable")
    failed = serializers.IntegerField(help_text="files that failed (each document says why)")
    running = serializers.BooleanField(help_text="true while some file is queued or being indexed")
    chunks_done = serializers.IntegerField(help_text="chunks indexed so far, across the batch")
    started_at = serializers.DateTimeField()
    seconds_elapsed = serializers.FloatField()
    seconds_left = serializers.FloatField(allow_null=True, help_text="at the pace so far (by bytes settled); null until a file settles")


class QueuedSerializer(serializers.Serializer):
    queued = serializers.IntegerField(help_text="documents queued for ingestion")


def _refused(name: str) -> PolymorphicProxySerializer:
    """Every file refused (per-file results) or the request itself invalid (the error shape)."""
    return PolymorphicProxySerializer(
        component_name=name, serializers=[UploadResponseSerializer, ErrorSerializer], resource_type_field_name=None
    )


class DocumentListCreateAPI(WorkspaceAPIView):
    serializer_class = DocumentSerializer
    parser_classes = [MultiPartParser]

    def get_queryset(self):
        return document_list(workspace=self.request.workspace)

    @extend_schema(responses={200: DocumentSerializer(many=True)} | error_responses())
    def get(self, request, workspace_id):
        return self.list(request)

    @extend_schema(
        request={"multipart/form-data": UploadSerializer},
        parameters=[idempotency.PARAMETER],
        responses={
            201: OpenApiResponse(UploadResponseSerializer, description="At least one file was added."),
            200: OpenApiResponse(UploadResponseSerializer, description="Every file was already there: these are those documents."),
            400: OpenApiResponse(_refused("UploadRefused"), description="No files, or every file refused (per-file results)."),
            413: OpenApiResponse(_refused("UploadTooLarge"), description="Every file was over the upload limit."),
        }
        | error_responses(403, 409, 415, 422),
        description=(
            "Upload one or more files; each is queued for ingestion. 201 when something was added, 200 when every file was "
            "already there (same content), 413 / 400 with the per-file results when every file was refused. "
            "With an `Idempotency-Key` header a repeat within 24 hours returns the first response."
        ),
    )
    @idempotent
    def post(self, request, workspace_id):
        files = request.FILES.getlist("files")
        if not files:
            raise ApplicationError("Send one or more files as multipart form field “files”.", field="files")
        if len(files) > settings.UPLOAD_MAX_FILES:
            raise ApplicationError(f"Upload at most {settings.UPLOAD_MAX_FILES} files at once.", field="files")
        batch, outcomes = services.documents_upload(workspace=request.workspace, actor=request.membership, uploads=files)
        results = [_result(outcome) for outcome in outcomes]
        return Response({"batch": batch, "results": results}, status=_upload_status(results))


def _result(outcome: services.Uploaded) -> dict:
    if outcome.error is not None:
        return {"filename": outcome.name, "error": {"code": outcome.error.code, "message": outcome.error.message}}
    return {"filename": outcome.name, "created": outcome.created, "document": DocumentSerializer(outcome.document).data}


class UploadBatchAPI(WorkspaceAPIView):
    serializer_class = BatchProgressSerializer

    @extend_schema(
        responses={200: BatchProgressSerializer} | error_responses(404),
        description="The progress of files uploaded together: files done, chunks indexed, time left.",
    )
    def get(self, request, workspace_id, batch_id):
        found = upload_batch_progress(workspace=request.workspace, batch=batch_id)
        if not found:
            raise Http404("No such upload batch.")
        return Response(BatchProgressSerializer(found[0]).data)


def _upload_status(results: list[dict]) -> int:
    """201 when something was added, 200 when all were already there, 4xx when every file failed."""
    errors = [r["error"]["code"] for r in results if "error" in r]
    if len(errors) < len(results):
        return status.HTTP_201_CREATED if any(r.get("created") for r in results) else status.HTTP_200_OK
    return status.HTTP_413_REQUEST_ENTITY_TOO_LARGE if set(errors) == {"too_large"} else status.HTTP_400_BAD_REQUEST


class DocumentDetailAPI(WorkspaceAPIView):
    serializer_class = DocumentSerializer

    @extend_schema(responses={200: DocumentSerializer} | error_responses())
    def get(self, request, workspace_id, document_id):
        return Response(DocumentSerializer(access_document(request.workspace, document_id)).data)

    @extend_schema(responses={204: None} | error_responses(403))
    def delete(self, request, workspace_id, document_id):
        services.document_delete(workspace=request.workspace, actor=request.membership, document_id=document_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentReindexAPI(WorkspaceAPIView):
    """POST: queue one settled document for ingestion again."""

    takes_body = False

    @extend_schema(operation_id="documents_reindex", request=None, responses={202: QueuedSerializer} | error_responses(403))
    def post(self, request, workspace_id, document_id):
        count = services.document_reindex(workspace=request.workspace, actor=request.membership, document_id=document_id)
        return Response({"queued": count}, status=status.HTTP_202_ACCEPTED)


class WorkspaceReindexAPI(WorkspaceAPIView):
    """POST: queue every settled document of the workspace (admins and owners)."""

    takes_body = False
    write_operation = "reindex_all"

    @extend_schema(operation_id="documents_reindex_all", request=None, responses={202: QueuedSerializer} | error_responses(403))
    def post(self, request, workspace_id):
        count = services.document_reindex(workspace=request.workspace, actor=request.membership)
        return Response({"queued": count}, status=status.HTTP_202_ACCEPTED)
