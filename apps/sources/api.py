from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.core import strict
from apps.core.api import error_responses
from apps.core.errors import ApplicationError
from apps.sources import services
from apps.sources.models import Schedule, Source, SourceItem, SourceKind
from apps.sources.selectors import source_get, source_items, source_list
from apps.workspaces import idempotency
from apps.workspaces.api_base import WorkspaceAPIView
from apps.workspaces.idempotency import idempotent


class ImportSourceSerializer(serializers.ModelSerializer):
    item_count = serializers.IntegerField(read_only=True, help_text="documents this source brought in")

    class Meta:
        model = Source
        fields = [
            "id",
            "kind",
            "query",
            "url",
            "max_count",
            "schedule",
            "status",
            "progress_done",
            "progress_total",
            "message",
            "item_count",
            "last_checked_at",
            "created_at",
        ]
        read_only_fields = fields


class ImportSourceItemSerializer(serializers.ModelSerializer):
    citation = serializers.CharField(read_only=True, help_text='how answers cite it: "PMID 27633186", or the URL')
    link = serializers.CharField(read_only=True, help_text="the article's PubMed page, or the URL")
    metadata = serializers.JSONField(read_only=True, help_text="title, journal, year, authors, DOI (PubMed); title (pages)")

    class Meta:
        model = SourceItem
        fields = ["external_id", "citation", "link", "document", "sha256", "metadata", "checked_at"]
        read_only_fields = fields


class ImportSourceDetailSerializer(ImportSourceSerializer):
    items = serializers.SerializerMethodField()

    class Meta(ImportSourceSerializer.Meta):
        fields = [*ImportSourceSerializer.Meta.fields, "items"]
        read_only_fields = fields

    def get_items(self, source) -> list[dict]:
        return ImportSourceItemSerializer(source_items(workspace=source.workspace, source_id=source.pk), many=True).data


class ImportSourceCreateSerializer(serializers.Serializer):
    kind = strict.ChoiceField(choices=SourceKind.choices)
    query = strict.TextField(max_length=4000, required=False, help_text="kind pubmed: the PubMed query")
    max_count = strict.IntegerField(required=False, default=50, min_value=1, help_text="kind pubmed: its articles at most")
    url = strict.TextField(max_length=2000, required=False, one_line=True, help_text="kind url: the web page's address")
    schedule = strict.ChoiceField(choices=Schedule.choices, default=Schedule.OFF, help_text="daily or weekly: admins and owners")


class ImportScheduleSerializer(serializers.Serializer):
    schedule = strict.ChoiceField(choices=Schedule.choices)


class SourceListCreateAPI(WorkspaceAPIView):
    serializer_class = ImportSourceSerializer

    def get_queryset(self):
        return source_list(workspace=self.request.workspace)

    @extend_schema(responses={200: ImportSourceSerializer(many=True)} | error_responses())
    def get(self, request, workspace_id):
        return self.list(request)

    @extend_schema(
        request=ImportSourceCreateSerializer,
        parameters=[idempotency.PARAMETER],
        responses={
            202: OpenApiResponse(ImportSourceSerializer, description="The source was created; its first check is queued."),
            200: OpenApiResponse(ImportSourceSerializer, description="The same query or URL was there: it is checked again."),
        }
        | error_responses(400, 403, 409, 422),
        description=(
            "Import a PubMed query (`kind` pubmed, `query`, `max_count`) or a web page (`kind` url, `url`). The check runs "
            "in the worker: poll the source for its status, progress and message. A schedule other than off needs an admin."
        ),
    )
    @idempotent
    def post(self, request, workspace_id):
        data = _valid(ImportSourceCreateSerializer, request)
        common = {"workspace": request.workspace, "actor": request.membership, "schedule": data["schedule"]}
        if data["kind"] == SourceKind.PUBMED:
            source, created = services.source_pubmed_create(**common, query=data.get("query", ""), max_count=data["max_count"])
        else:
            ((source, created),) = services.source_urls_create(**common, urls=[data.get("url", "")])
        source = source_get(workspace=request.workspace, source_id=source.pk)
        return Response(ImportSourceSerializer(source).data, status=status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK)


class SourceDetailAPI(WorkspaceAPIView):
    serializer_class = ImportSourceDetailSerializer

    @extend_schema(responses={200: ImportSourceDetailSerializer} | error_responses())
    def get(self, request, workspace_id, source_id):
        return Response(ImportSourceDetailSerializer(source_get(workspace=request.workspace, source_id=source_id)).data)

    @extend_schema(responses={204: None} | error_responses(403, 409), description="Delete the source and the documents it brought in.")
    def delete(self, request, workspace_id, source_id):
        services.source_delete(workspace=request.workspace, actor=request.membership, source_id=source_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SourceCheckAPI(WorkspaceAPIView):
    """POST: check the source again now (new articles added, changed ones re-ingested)."""

    takes_body = False

    @extend_schema(operation_id="sources_check", request=None, responses={202: ImportSourceSerializer} | error_responses(403, 409))
    def post(self, request, workspace_id, source_id):
        services.source_check(workspace=request.workspace, actor=request.membership, source_id=source_id)
        return Response(
            ImportSourceSerializer(source_get(workspace=request.workspace, source_id=source_id)).data, status=status.HTTP_202_ACCEPTED
        )


class SourceScheduleAPI(WorkspaceAPIView):
    """POST: how often the scheduler re-checks the source (admins and owners)."""

    write_operation = "schedule_sources"

    @extend_schema(
        operation_id="sources_schedule",
        request=ImportScheduleSerializer,
        responses={200: ImportSourceSerializer} | error_responses(400, 403),
    )
    def post(self, request, workspace_id, source_id):
        schedule = _valid(ImportScheduleSerializer, request)["schedule"]
        services.source_schedule(workspace=request.workspace, actor=request.membership, source_id=source_id, schedule=schedule)
        return Response(ImportSourceSerializer(source_get(workspace=request.workspace, source_id=source_id)).data)


def _valid(serializer_class, request) -> dict:
    if not isinstance(request.data, dict):
        raise ApplicationError("Send a JSON object.")
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
