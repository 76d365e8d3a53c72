from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.response import Response

from apps.core.api import WorkspaceAPIView
from apps.queries.models import QueryMode, QueryRun
from apps.queries.selectors import access_query_run, query_run_list
from apps.queries.services import query_answer


class AskSerializer(serializers.Serializer):
    question = serializers.CharField(max_length=4000, trim_whitespace=True)
    mode = serializers.ChoiceField(choices=QueryMode.choices, default=QueryMode.VERIFIED)
    enable_gating = serializers.BooleanField(required=False, help_text="false is naive mode: no confidence gate")
    threshold_override = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)

    def validate(self, data):
        if data.pop("enable_gating", True) is False:
            data["mode"] = QueryMode.NAIVE
        return data


class QueryRunSerializer(serializers.ModelSerializer):
    asked_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = QueryRun
        fields = [
            "id",
            "question",
            "mode",
            "status",
            "answer",
            "insufficient",
            "provider",
            "claims",
            "sources",
            "grounding",
            "gate",
            "asked_by",
            "created_at",
            "duration_ms",
        ]
        read_only_fields = fields


class QueryListCreateAPI(WorkspaceAPIView):
    serializer_class = QueryRunSerializer

    def get_queryset(self):
        return query_run_list(workspace=self.request.workspace)

    def get(self, request, workspace_id):
        return self.list(request)

    def post(self, request, workspace_id):
        incoming = AskSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        run = query_answer(
            workspace=request.workspace, actor=request.user, actor_label=f"api:{request.user.get_username()}", **incoming.validated_data
        )
        return Response(QueryRunSerializer(run).data, status=status.HTTP_201_CREATED)


class QueryDetailAPI(WorkspaceAPIView):
    serializer_class = QueryRunSerializer

    def get(self, request, workspace_id, run_id):
        return Response(QueryRunSerializer(access_query_run(request.workspace, run_id)).data)
