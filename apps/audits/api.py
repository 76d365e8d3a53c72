from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.audits import services
from apps.audits.forms import AuditFilterForm
from apps.audits.models import AuditRecord
from apps.audits.selectors import MODES, RISKS, SORTS, VERDICTS, access_audit_record, audit_record_link_ok, audit_record_list
from apps.audits.views import export_response
from apps.core.api import error_responses
from apps.core.errors import ApplicationError
from apps.workspaces.api_base import WorkspaceAPIView

FILTER_PARAMETERS = [
    OpenApiParameter("q", str, description="full-text search over questions"),
    OpenApiParameter("risk", str, enum=list(RISKS)),
    OpenApiParameter("refused", str, enum=["yes", "no"]),
    OpenApiParameter(
        "source_changed", str, enum=["yes", "no"], description="answers whose cited documents were deleted or re-indexed since"
    ),
    OpenApiParameter("mode", str, enum=list(MODES)),
    OpenApiParameter("verdict", str, enum=list(VERDICTS), description="records with a claim judged so"),
    OpenApiParameter("actor", str, description="user name or API key label"),
    OpenApiParameter("date_from", OpenApiTypes.DATE),
    OpenApiParameter("date_to", OpenApiTypes.DATE),
    OpenApiParameter("sort", str, enum=list(SORTS)),
    OpenApiParameter("evaluation", bool, description="also the answers evaluation runs asked for (left out by default)"),
]


class AuditRecordSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditRecord
        fields = ["id", "sequence", "query_run_id", "actor_label", "prev_hash", "hash", "created_at"]
        read_only_fields = fields


class AuditRecordDetailSerializer(AuditRecordSerializer):
    link_ok = serializers.SerializerMethodField(help_text="the record hashes to its hash and follows the one before it")

    class Meta(AuditRecordSerializer.Meta):
        fields = [*AuditRecordSerializer.Meta.fields, "payload", "link_ok"]
        read_only_fields = fields

    def get_link_ok(self, record) -> bool:
        return audit_record_link_ok(record)


def _filters(request):
    form = AuditFilterForm(request.query_params)
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        raise ApplicationError(errors[0], field=field)
    return form.filters()


class AuditListAPI(WorkspaceAPIView):
    """The audit history with the history page's filters, newest first unless sorted otherwise."""

    serializer_class = AuditRecordSerializer

    def get_queryset(self):
        return audit_record_list(workspace=self.request.workspace, filters=_filters(self.request))

    @extend_schema(parameters=FILTER_PARAMETERS, responses={200: AuditRecordSerializer(many=True)} | error_responses(400))
    def get(self, request, workspace_id):
        return self.list(request)


class AuditDetailAPI(WorkspaceAPIView):
    serializer_class = AuditRecordDetailSerializer

    @extend_schema(responses={200: AuditRecordDetailSerializer} | error_responses())
    def get(self, request, workspace_id, record_id):
        return Response(AuditRecordDetailSerializer(access_audit_record(request.workspace, record_id)).data)


class AuditExportAPI(WorkspaceAPIView):
    """The filtered history as CSV or JSON, streamed; the export is itself audited."""

    serializer_class = AuditRecordSerializer  # for the schema generator; the body is CSV or JSON rows

    def perform_content_negotiation(self, request, force=False):
        # The body is CSV or JSON by the path, whatever the Accept header asks; errors stay JSON.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        operation_id="audits_export",
        parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=sorted(services.EXPORT_FORMATS)), *FILTER_PARAMETERS],
        responses={(200, "text/csv"): OpenApiTypes.STR, (200, "application/json"): {"type": "array", "items": {"type": "object"}}}
        | error_responses(400),
    )
    def get(self, request, workspace_id, fmt: str):
        pieces = services.audit_export(workspace=request.workspace, actor=request.membership, filters=_filters(request), fmt=fmt)
        return export_response(pieces, request.workspace, fmt)
