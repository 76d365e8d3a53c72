from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from apps.core import strict
from apps.core.api import ErrorSerializer, error_responses
from apps.core.errors import ApplicationError
from apps.evals import services
from apps.evals.models import EvalQuestion, EvalResult, EvalRun, EvalSet
from apps.evals.selectors import (
    access_eval_run,
    access_eval_set,
    eval_question_list,
    eval_result_list,
    eval_run_list,
    eval_run_report,
    eval_set_list,
)
from apps.workspaces.api_base import WorkspaceAPIView


class EvalSetSerializer(serializers.ModelSerializer):
    class Meta:
        model = EvalSet
        fields = ["id", "name", "source_format", "question_count", "answerable_count", "created_at"]
        read_only_fields = fields


class EvalQuestionSerializer(serializers.ModelSerializer):
    class Meta:
        model = EvalQuestion
        fields = ["ordinal", "question", "answerable", "expected_answers", "expected_source"]
        read_only_fields = fields


class EvalSetDetailSerializer(EvalSetSerializer):
    questions = serializers.SerializerMethodField()

    class Meta(EvalSetSerializer.Meta):
        fields = [*EvalSetSerializer.Meta.fields, "questions"]
        read_only_fields = fields

    def get_questions(self, eval_set) -> list[dict]:
        questions = eval_question_list(workspace=self.context["workspace"], eval_set=eval_set)
        return EvalQuestionSerializer(questions, many=True).data


class EvalSetUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="JSONL or CSV (question, answerable, expected_answer?, expected_source?) or SQuAD 2.0 JSON")
    name = strict.TextField(required=False, allow_blank=True, max_length=200, one_line=True)


class EvalRunSerializer(serializers.ModelSerializer):
    set = serializers.UUIDField(source="eval_set_id", read_only=True)
    set_name = serializers.CharField(source="eval_set.name", read_only=True)
    url = serializers.SerializerMethodField(help_text="poll this until status is done or failed")

    class Meta:
        model = EvalRun
        fields = [
            "id",
            "set",
            "set_name",
            "status",
            "progress_done",
            "progress_total",
            "gate_threshold",
            "crag_lower",
            "crag_upper",
            "error",
            "created_at",
            "finished_at",
            "url",
        ]
        read_only_fields = fields

    def get_url(self, run) -> str:
        return reverse("api_eval_run", args=[run.workspace_id, run.pk])


class EvalResultSerializer(serializers.ModelSerializer):
    question = serializers.CharField(source="question.question", read_only=True)
    answerable = serializers.BooleanField(source="question.answerable", read_only=True)

    class Meta:
        model = EvalResult
        fields = ["ordinal", "question", "answerable", "top_score", "retrieval_score", "verified", "naive"]
        read_only_fields = fields


class EvalRunDetailSerializer(EvalRunSerializer):
    report = serializers.SerializerMethodField(help_text="metrics, sweep and recommendation; null until the run settles")
    results = serializers.SerializerMethodField()

    class Meta(EvalRunSerializer.Meta):
        fields = [*EvalRunSerializer.Meta.fields, "report", "results"]
        read_only_fields = fields

    def get_report(self, run) -> dict | None:
        return eval_run_report(run) if run.settled else None

    def get_results(self, run) -> list[dict]:
        return EvalResultSerializer(eval_result_list(workspace=run.workspace, run=run), many=True).data


class AppliedSerializer(serializers.Serializer):
    applied = serializers.DictField(child=serializers.FloatField(), help_text="setting → the value now in force")


class EvalSetListCreateAPI(WorkspaceAPIView):
    serializer_class = EvalSetSerializer
    parser_classes = [MultiPartParser]

    def get_queryset(self):
        return eval_set_list(workspace=self.request.workspace)

    @extend_schema(responses={200: EvalSetSerializer(many=True)} | error_responses())
    def get(self, request, workspace_id):
        return self.list(request)

    @extend_schema(
        request={"multipart/form-data": EvalSetUploadSerializer},
        responses={201: EvalSetDetailSerializer} | error_responses(400, 403, 413, 415),
        description="Upload an evaluation set; a bad file is refused whole, with the line (or JSON path) and field at fault.",
    )
    def post(self, request, workspace_id):
        upload = request.FILES.get("file")
        if upload is None:
            raise ApplicationError("Send the file as multipart form field “file”.", field="file")
        eval_set = services.eval_set_create(
            workspace=request.workspace,
            actor=request.membership,
            filename=upload.name,
            data=upload.read(),
            name=request.data.get("name", ""),
        )
        return Response(EvalSetDetailSerializer(eval_set, context=self.get_serializer_context()).data, status=status.HTTP_201_CREATED)


class EvalSetDetailAPI(WorkspaceAPIView):
    serializer_class = EvalSetDetailSerializer

    @extend_schema(responses={200: EvalSetDetailSerializer} | error_responses())
    def get(self, request, workspace_id, set_id):
        return Response(self.get_serializer(access_eval_set(request.workspace, set_id)).data)

    @extend_schema(responses={204: None} | error_responses(403))
    def delete(self, request, workspace_id, set_id):
        services.eval_set_delete(workspace=request.workspace, actor=request.membership, set_id=set_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class EvalRunListCreateAPI(WorkspaceAPIView):
    serializer_class = EvalRunSerializer
    takes_body = False  # POST starts a run of the set in the URL

    def get_queryset(self):
        eval_set = access_eval_set(self.request.workspace, self.kwargs["set_id"])
        return eval_run_list(workspace=self.request.workspace, eval_set=eval_set)

    @extend_schema(responses={200: EvalRunSerializer(many=True)} | error_responses())
    def get(self, request, workspace_id, set_id):
        return self.list(request)

    @extend_schema(
        request=None,
        responses={202: OpenApiResponse(EvalRunSerializer, description="Queued: poll `url`.")} | error_responses(403),
        description="Start a run: every question in verified mode (gate opened, top score recorded) and in naive mode, in a worker.",
    )
    def post(self, request, workspace_id, set_id):
        run = services.eval_run_create(workspace=request.workspace, actor=request.membership, set_id=set_id)
        return Response(
            EvalRunSerializer(run).data, status=status.HTTP_202_ACCEPTED, headers={"Location": EvalRunSerializer(run).data["url"]}
        )


class EvalRunDetailAPI(WorkspaceAPIView):
    serializer_class = EvalRunDetailSerializer

    @extend_schema(responses={200: EvalRunDetailSerializer} | error_responses())
    def get(self, request, workspace_id, run_id):
        return Response(self.get_serializer(access_eval_run(request.workspace, run_id)).data)


class EvalRunApplyAPI(WorkspaceAPIView):
    """POST: apply the run's recommended gate and CRAG thresholds (owners and admins; audited)."""

    takes_body = False
    write_operation = "apply_evaluation"

    @extend_schema(
        request=None,
        responses={200: AppliedSerializer, 409: OpenApiResponse(ErrorSerializer, description="The run has no recommendation (yet).")}
        | error_responses(403),
    )
    def post(self, request, workspace_id, run_id):
        applied = services.eval_run_apply(workspace=request.workspace, actor=request.membership, run_id=run_id)
        return Response({"applied": applied})
