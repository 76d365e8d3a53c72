from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.audits.models import AuditRecord
from apps.core.api import WorkspaceAPIView
from apps.queries.models import QueryMode, QueryRun
from apps.queries.selectors import access_query_run, query_run_list
from apps.queries.services import query_answer, query_run_enqueue


class AskSerializer(serializers.Serializer):
    question = serializers.CharField(max_length=4000, trim_whitespace=True, required=False)
    query = serializers.CharField(
        max_length=4000, trim_whitespace=True, required=False, help_text="the question (the original designs' name)"
    )
    mode = serializers.ChoiceField(choices=QueryMode.choices, default=QueryMode.VERIFIED)
    enable_gating = serializers.BooleanField(required=False, help_text="false is naive mode: no confidence gate")
    threshold_override = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)

    def get_fields(self):
        fields = super().get_fields()
        # "async" is a Python keyword, so the field cannot be declared as a class attribute.
        fields["async"] = serializers.BooleanField(required=False, default=False, help_text="true: answer 202 with a URL to poll")
        return fields

    def validate(self, data):
        question = data.pop("question", None) or data.pop("query", None)
        data.pop("query", None)
        if not question:
            raise serializers.ValidationError({"question": "Send the question as “question” (or “query”)."})
        data["question"] = question
        if data.pop("enable_gating", True) is False:
            data["mode"] = QueryMode.NAIVE
        return data


class QueryRunSerializer(serializers.ModelSerializer):
    asked_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    audit_id = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    # The names the original TrustRAG designs used, so their clients keep working.
    refusal_triggered = serializers.SerializerMethodField()
    confidence_score = serializers.FloatField(source="confidence", read_only=True)
    hallucination_risk = serializers.SerializerMethodField()

    def get_audit_id(self, run) -> str | None:
        found = AuditRecord.objects.filter(workspace_id=run.workspace_id, query_run_id=run.pk).values_list("pk", flat=True).first()
        return None if found is None else str(found)

    def get_url(self, run) -> str:
        return reverse("api_query", kwargs={"workspace_id": run.workspace_id, "run_id": run.pk})

    def get_refusal_triggered(self, run) -> bool | None:
        return run.insufficient if run.settled else None

    def get_hallucination_risk(self, run) -> str | None:
        return run.risk.capitalize() if run.risk else None

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
            "confidence",
            "risk",
            "trust",
            "attempts",
            "stages",
            "partial_answer",
            "error",
            "audit_id",
            "url",
            "refusal_triggered",
            "confidence_score",
            "hallucination_risk",
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
        options = dict(incoming.validated_data)
        run_async = options.pop("async")
        label = f"api:{request.user.get_username()}"
        if run_async:
            run = query_run_enqueue(workspace=request.workspace, actor=request.user, actor_label=label, **options)
            body = QueryRunSerializer(run).data
            return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})
        run = query_answer(workspace=request.workspace, actor=request.user, actor_label=label, **options)
        return Response(QueryRunSerializer(run).data, status=status.HTTP_201_CREATED)


class QueryDetailAPI(WorkspaceAPIView):
    serializer_class = QueryRunSerializer

    def get(self, request, workspace_id, run_id):
        return Response(QueryRunSerializer(access_query_run(request.workspace, run_id)).data)
