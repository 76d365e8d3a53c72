from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.audits.selectors import audit_record_for_run
from apps.core import idempotency, strict
from apps.core.api import error_responses
from apps.core.idempotency import idempotent
from apps.queries.models import QueryMode, QueryRun, QueryStatus
from apps.queries.selectors import access_query_run, query_run_list
from apps.queries.services import query_answer, query_run_enqueue
from apps.workspaces.api_base import WorkspaceAPIView


class AskSerializer(serializers.Serializer):
    question = strict.TextField(max_length=4000, trim_whitespace=True, required=False)
    query = strict.TextField(max_length=4000, trim_whitespace=True, required=False, help_text="the question (the original designs' name)")
    mode = strict.ChoiceField(choices=QueryMode.choices, default=QueryMode.VERIFIED)
    enable_gating = strict.BooleanField(required=False, help_text="false is naive mode: no confidence gate")
    threshold_override = strict.FloatField(required=False, min_value=0.0, max_value=1.0)

    def get_fields(self):
        fields = super().get_fields()
        # "async" is a Python keyword, so the field cannot be declared as a class attribute.
        fields["async"] = strict.BooleanField(required=False, default=False, help_text="true: answer 202 with a URL to poll")
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


# The shapes of the run's JSON columns, for the schema (the API returns the columns as stored).


class ClaimSerializer(serializers.Serializer):
    text = serializers.CharField()
    source = serializers.IntegerField(help_text="number of the cited source in `sources`")
    source_title = serializers.CharField(allow_null=True)
    quote = serializers.CharField(help_text="copied verbatim from the source, as the generator claims")
    quote_status = serializers.CharField(help_text="where the quote was found: located, or hallucinated_quote")
    locator = serializers.CharField(allow_null=True, help_text="exact or fuzzy")
    locator_score = serializers.FloatField(allow_null=True)
    start = serializers.IntegerField(allow_null=True, help_text="offset of the quote in the document's text")
    end = serializers.IntegerField(allow_null=True)
    verdict = serializers.CharField(help_text="supports, partial, contradicts, not_found, hallucinated_quote or not_judged")
    judge = serializers.CharField(allow_null=True)
    faithful = serializers.BooleanField(help_text="located and supported")


class SourceSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    document_id = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_null=True)
    chunk_id = serializers.CharField(allow_null=True)
    ordinal = serializers.IntegerField(allow_null=True)
    text = serializers.CharField()
    start = serializers.IntegerField(allow_null=True)
    end = serializers.IntegerField(allow_null=True)
    fused_score = serializers.FloatField(allow_null=True)
    dense_score = serializers.FloatField(allow_null=True)
    keyword_score = serializers.FloatField(allow_null=True)
    rerank_score = serializers.FloatField(allow_null=True, help_text="relevance in [0, 1]")
    url = serializers.CharField(allow_null=True, help_text="set for a web search result")


class GateSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    threshold = serializers.FloatField()
    top_score = serializers.FloatField(allow_null=True, help_text="the gate score: min(relevance, answerability)")
    passed = serializers.BooleanField()
    reason = serializers.CharField()
    # Absent from answers recorded before the gate judged answerability.
    relevance = serializers.FloatField(required=False, allow_null=True, help_text="the best passage's relevance in [0, 1]")
    answerability = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="the local judge's belief in [0, 1] that the best passage answers the question (verified mode)",
    )


class TrustSerializer(serializers.Serializer):
    retrieval = serializers.FloatField(allow_null=True)
    agreement = serializers.FloatField(allow_null=True)
    grounding = serializers.FloatField(allow_null=True)
    reasons = serializers.ListField(child=serializers.CharField())


class AttemptSerializer(serializers.Serializer):
    provider = serializers.CharField()
    model = serializers.CharField()
    outcome = serializers.CharField(help_text="ok, failed or skipped")
    ms = serializers.FloatField()
    error_class = serializers.CharField()
    message = serializers.CharField(help_text="scrubbed of keys")
    repaired = serializers.BooleanField()
    key_source = serializers.CharField()


class StageSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField()
    ms = serializers.FloatField(allow_null=True)
    detail = serializers.CharField()


class RefusalSerializer(serializers.Serializer):
    by = serializers.ChoiceField(choices=["gate", "generator"], help_text="the confidence gate, or the provider that found no answer")
    reason = serializers.CharField()


class QueryRunSerializer(serializers.ModelSerializer):
    asked_by = serializers.SerializerMethodField(help_text="username, or the API key's label")
    claims = serializers.SerializerMethodField()
    sources = serializers.SerializerMethodField()
    gate = serializers.SerializerMethodField()
    trust = serializers.SerializerMethodField()
    attempts = serializers.SerializerMethodField()
    stages = serializers.SerializerMethodField()
    refusal = serializers.SerializerMethodField(help_text="null when answered (or not settled yet)")
    audit_id = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    # The names the original TrustRAG designs used, so their clients keep working.
    refusal_triggered = serializers.SerializerMethodField()
    confidence_score = serializers.FloatField(source="confidence", read_only=True, allow_null=True)
    hallucination_risk = serializers.SerializerMethodField()

    def get_asked_by(self, run) -> str:
        return run.asked_by.username if run.asked_by else run.actor_label

    @extend_schema_field(ClaimSerializer(many=True))
    def get_claims(self, run):
        return run.claims

    @extend_schema_field(SourceSerializer(many=True))
    def get_sources(self, run):
        return run.sources

    @extend_schema_field(GateSerializer(allow_null=True))
    def get_gate(self, run):
        return run.gate or None

    @extend_schema_field(TrustSerializer(allow_null=True))
    def get_trust(self, run):
        return run.trust or None

    @extend_schema_field(AttemptSerializer(many=True))
    def get_attempts(self, run):
        return run.attempts

    @extend_schema_field(StageSerializer(many=True))
    def get_stages(self, run):
        return run.stages

    @extend_schema_field(RefusalSerializer(allow_null=True))
    def get_refusal(self, run):
        if run.status != QueryStatus.DONE or not run.insufficient:
            return None
        if run.gate.get("passed") is False:
            return {"by": "gate", "reason": run.gate.get("reason", "")}
        return {"by": "generator", "reason": f"{run.provider or 'the provider'} found nothing in the sources that answers the question"}

    def get_audit_id(self, run) -> str | None:
        if hasattr(run, "audit_record_id"):  # read with the run by the selectors: no query per row
            found = run.audit_record_id
        else:  # a run just answered or queued by this request
            found = getattr(audit_record_for_run(workspace=run.workspace, query_run_id=run.pk), "pk", None)
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
            "refusal",
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

    @extend_schema(responses={200: QueryRunSerializer(many=True)} | error_responses())
    def get(self, request, workspace_id):
        return self.list(request)

    @extend_schema(
        request=AskSerializer,
        parameters=[idempotency.PARAMETER],
        responses={
            201: OpenApiResponse(QueryRunSerializer, description="The answer."),
            202: OpenApiResponse(QueryRunSerializer, description="Queued (`async`): poll `url`."),
        }
        | error_responses(400, 403, 409, 415, 422),
        description=(
            'Ask a question. 201 with the verified answer; with `"async": true`, 202 at once with `url` (and `Location`) '
            "to poll until `status` is done or failed. With an `Idempotency-Key` header a repeat within 24 hours returns "
            "the first response without asking again."
        ),
    )
    @idempotent
    def post(self, request, workspace_id):
        incoming = AskSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        options = dict(incoming.validated_data)
        run_async = options.pop("async")
        ask = {"workspace": request.workspace, "actor": request.membership, "actor_label": self.actor_label, **options}
        if run_async:
            body = QueryRunSerializer(query_run_enqueue(**ask)).data
            return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})
        return Response(QueryRunSerializer(query_answer(**ask)).data, status=status.HTTP_201_CREATED)


class QueryDetailAPI(WorkspaceAPIView):
    serializer_class = QueryRunSerializer

    @extend_schema(responses={200: QueryRunSerializer} | error_responses())
    def get(self, request, workspace_id, run_id):
        return Response(QueryRunSerializer(access_query_run(request.workspace, run_id)).data)
