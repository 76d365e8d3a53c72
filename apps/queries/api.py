from __future__ import annotations

from dataclasses import asdict

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.audits.selectors import audit_record_id_for_run
from apps.core import strict
from apps.core.api import error_responses
from apps.pipeline.citations import Citation, marked_text, place_citations
from apps.queries.models import QueryMode, QueryRun, QueryStatus
from apps.queries.selectors import access_query_run, query_run_list, query_run_refusal
from apps.queries.services import query_answer, query_run_enqueue
from apps.queries.sources import query_run_reverify
from apps.workspaces import idempotency
from apps.workspaces.api_base import WorkspaceAPIView
from apps.workspaces.idempotency import idempotent


@extend_schema_serializer(deprecate_fields=["query"])
class AskSerializer(serializers.Serializer):
    question = strict.TextField(max_length=4000, trim_whitespace=True, required=False)
    query = strict.TextField(
        max_length=4000,
        trim_whitespace=True,
        required=False,
        help_text="deprecated: the question's name in the original designs; send `question`",
    )
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
    quote_status = serializers.CharField(
        help_text="where the quote was found: located, hallucinated_quote, or source_deleted (re-verified after its document was deleted)"
    )
    locator = serializers.CharField(allow_null=True, help_text="exact or fuzzy")
    locator_score = serializers.FloatField(allow_null=True)
    start = serializers.IntegerField(allow_null=True, help_text="offset of the quote in the document's text")
    end = serializers.IntegerField(allow_null=True)
    verdict = serializers.CharField(
        help_text="supports, partial, contradicts, not_found, hallucinated_quote, not_judged, source_deleted (cannot be checked), "
        "or unsure (not checked by the local judge: read the quote)"
    )
    local_verdict = serializers.CharField(
        required=False, allow_null=True, help_text="for an unsure claim, the local judge's tentative verdict; null otherwise"
    )
    judge = serializers.CharField(allow_null=True, help_text="who decided the claim: local, verifier, llm:groq, …")
    faithful = serializers.BooleanField(help_text="located and supported")
    # Absent from answers recorded before claims had an outcome.
    outcome = serializers.CharField(
        required=False,
        help_text="verified, flagged, or unsure: the local judge could not tell at the workspace's target precision — read the quote; "
        "an unsure claim is neither supported nor hallucinated",
    )
    p_supports = serializers.FloatField(
        required=False, allow_null=True, help_text="the local judge's calibrated probability that the quote supports the claim"
    )
    # Absent from answers recorded before claims were read against the question.
    answer_score = serializers.FloatField(
        required=False, allow_null=True, help_text="the answer scorer's raw score that the quoted sentence answers the question"
    )
    answers = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="calibrated probability in [0, 1] that an answer led by this claim is right (null: not read, or no calibration)",
    )


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
    location = serializers.CharField(
        required=False, allow_null=True, help_text='where the passage sits: "p. 3", "p. 3, OCR", "Sales, rows 2–5", "slide 4"'
    )


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
    answering = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="p(the answer answers the question): its best-answering claim's; risk is Low only when it, too, is at the Low cut-off",
    )
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
    by = serializers.ChoiceField(
        choices=["gate", "corrective", "provider"],
        help_text="the confidence gate; the corrective step (no passage above its lower threshold); or the provider, which found no answer",
    )
    who = serializers.CharField(help_text="`by` in words")
    reason = serializers.CharField()
    provider = serializers.CharField(allow_null=True, help_text="the provider that refused (by provider)")
    relevance = serializers.FloatField(allow_null=True, help_text="the best passage's relevance")
    answerability = serializers.FloatField(allow_null=True, help_text="the verifier's belief that the best passage answers")
    score = serializers.FloatField(allow_null=True, help_text="the score held to `threshold`")
    threshold = serializers.FloatField(allow_null=True)
    threshold_name = serializers.CharField(
        help_text="which threshold: the gate's (passed, for a provider's refusal) or corrective RAG's lower one"
    )


class SourceChangeSerializer(serializers.Serializer):
    source = serializers.IntegerField(help_text="the source's number in `sources`")
    document_id = serializers.CharField()
    title = serializers.CharField()
    change = serializers.ChoiceField(
        choices=["deleted", "changed"], help_text="deleted, or re-indexed with different text where the passage stood"
    )


class CitationSerializer(serializers.Serializer):
    claim = serializers.IntegerField(help_text="the claim's number in `claims`")
    source = serializers.IntegerField(help_text="the source it cites, as marked in `answer_marked`")
    start = serializers.IntegerField(
        allow_null=True, help_text="where the claim's statement stands in `answer`; null when the text does not hold it"
    )
    end = serializers.IntegerField(allow_null=True)


@extend_schema_serializer(deprecate_fields=["refusal_triggered", "confidence_score", "hallucination_risk"])
class QueryRunSerializer(serializers.ModelSerializer):
    asked_by = serializers.SerializerMethodField(help_text="username, or the API key's label")
    claims = serializers.SerializerMethodField()
    sources = serializers.SerializerMethodField()
    gate = serializers.SerializerMethodField()
    trust = serializers.SerializerMethodField()
    attempts = serializers.SerializerMethodField()
    stages = serializers.SerializerMethodField()
    refusal = serializers.SerializerMethodField(help_text="null when answered (or not settled yet)")
    answer_marked = serializers.SerializerMethodField(help_text="the answer with each claim's source number after it: … [1]")
    citations = serializers.SerializerMethodField()
    source_changed = serializers.SerializerMethodField(help_text="a cited document was deleted or re-indexed with different text")
    source_changes = serializers.SerializerMethodField()
    reverifies = serializers.SerializerMethodField(help_text="the id of the answer this run re-verified, or null")
    reverify_url = serializers.SerializerMethodField(help_text="POST here to re-verify this answer against its sources' current text")
    audit_id = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    # The names the original TrustRAG designs used, kept (deprecated) so their clients keep working.
    refusal_triggered = serializers.SerializerMethodField(help_text="deprecated: read `insufficient` (or `refusal`)")
    confidence_score = serializers.SerializerMethodField(help_text="deprecated: read `confidence`")
    hallucination_risk = serializers.SerializerMethodField(
        help_text="deprecated: read `risk` (Low, Medium or High here; null for a refusal)"
    )
    confidence = serializers.SerializerMethodField(help_text="null for a refusal")
    risk = serializers.SerializerMethodField(help_text="low, medium, high, or refused")

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
        return query_run_refusal(run) if run.status == QueryStatus.DONE else None

    def _citations(self, run) -> list[Citation]:
        return place_citations(run.answer, run.claims) if run.status == QueryStatus.DONE and not run.insufficient else []

    def get_answer_marked(self, run) -> str:
        return marked_text(run.answer, self._citations(run)) if run.status == QueryStatus.DONE else run.answer

    @extend_schema_field(CitationSerializer(many=True))
    def get_citations(self, run):
        return [asdict(c) for c in self._citations(run)]

    def get_source_changed(self, run) -> bool:
        return run.source_changed_at is not None

    @extend_schema_field(SourceChangeSerializer(many=True))
    def get_source_changes(self, run):
        return run.source_changes

    def get_reverifies(self, run) -> str | None:
        return None if run.reverifies_id is None else str(run.reverifies_id)

    def get_reverify_url(self, run) -> str:
        return reverse("api_query_reverify", kwargs={"workspace_id": run.workspace_id, "run_id": run.pk})

    def _refused(self, run) -> bool:
        return run.status == QueryStatus.DONE and run.insufficient

    def get_confidence(self, run) -> float | None:
        return None if self._refused(run) else run.confidence

    def get_confidence_score(self, run) -> float | None:
        return self.get_confidence(run)

    def get_risk(self, run) -> str:
        return "refused" if self._refused(run) else run.risk

    def get_audit_id(self, run) -> str | None:
        if hasattr(run, "audit_record_id"):  # read with the run by the selectors: no query per row
            found = run.audit_record_id
        else:  # a run just answered or queued by this request
            found = audit_record_id_for_run(workspace=run.workspace, query_run_id=run.pk)
        return None if found is None else str(found)

    def get_url(self, run) -> str:
        return reverse("api_query", kwargs={"workspace_id": run.workspace_id, "run_id": run.pk})

    def get_refusal_triggered(self, run) -> bool | None:
        return run.insufficient if run.settled else None

    def get_hallucination_risk(self, run) -> str | None:
        return None if self._refused(run) or not run.risk else run.risk.capitalize()

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
            "answer_marked",
            "citations",
            "source_changed",
            "source_changes",
            "reverifies",
            "reverify_url",
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


class QueryReverifyAPI(WorkspaceAPIView):
    takes_body = False

    serializer_class = QueryRunSerializer
    write_operation = "reverify"

    @extend_schema(
        request=None,
        responses={201: OpenApiResponse(QueryRunSerializer, description="The re-verification: a new answer linked to the original.")}
        | error_responses(400, 403),
        description=(
            "Judge an answer's claims again against its sources' current text (after a cited document was deleted or "
            "re-indexed). The new verdicts are a new run (`reverifies` names the original) with its own audit record linked "
            "to the original's, which stays as it was."
        ),
    )
    def post(self, request, workspace_id, run_id):
        run = query_run_reverify(workspace=request.workspace, actor=request.membership, run_id=run_id, actor_label=self.actor_label)
        return Response(QueryRunSerializer(run).data, status=status.HTTP_201_CREATED)
