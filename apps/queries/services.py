"""The orchestration service: drives the pipeline stages for one question and records the answer."""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from datetime import timedelta
from functools import cache

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.audits.services import audit_record_create
from apps.core.broker import send_on_commit
from apps.core.errors import ApplicationError
from apps.core.guard import clean_text
from apps.documents.selectors import chunk_citations_get, chunk_search
from apps.pipeline.answer import AnswerParams, AnswerTrace, StageClock, Tools, answer
from apps.pipeline.answering import AnswerReader
from apps.pipeline.corrective import CorrectiveParams
from apps.pipeline.embedding import product_embedder
from apps.pipeline.judging.selective import UNSURE
from apps.pipeline.providers import ChatProvider, LocalProvider, Router
from apps.pipeline.rerank import get_reranker
from apps.pipeline.rescoring import Assessment, assess
from apps.pipeline.retrieval import RetrievalParams
from apps.pipeline.trust import TrustWeights
from apps.pipeline.verifier_judge import VerifierJudge, get_local_judge
from apps.pipeline.websearch import TavilySearch
from apps.queries.models import QueryMode, QueryRun, QueryStatus
from apps.workspaces.models import Workspace, WorkspaceSettings
from apps.workspaces.selectors import provider_secrets, provider_specs_get, settings_get
from apps.workspaces.tenancy import actor_label as label_of
from apps.workspaces.tenancy import require


class _Progress:
    """Records the stages on the run as they complete, with the answer text as it streams, so
    the Ask page can show both live (the pipeline's clock times them). It writes at most every
    FLUSH_EVERY_S (and the text carries the stages with it): an answer done in a tenth of a second
    writes no progress at all, only its result, since nobody could have watched it."""

    FLUSH_EVERY_S = 0.25

    def __init__(self, run: QueryRun):
        self.run = run
        self._flushed_at = time.monotonic()
        self.clock = StageClock(on_stage=self.stage_done, on_text=self.text)

    def stage_done(self, name: str, status: str, ms: float | None, detail: str) -> None:
        self.run.stages = [*self.run.stages, {"name": name, "status": status, "ms": ms, "detail": detail}]
        if self._due():
            QueryRun.objects.filter(pk=self.run.pk).update(stages=self.run.stages)

    def text(self, answer_so_far: str) -> None:
        """The streamed text so far; an empty text (a provider that failed mid-stream, the next
        one starting) is written at once, so the page never shows the failed provider's words."""
        if self._due() or not answer_so_far:
            QueryRun.objects.filter(pk=self.run.pk).update(stages=self.run.stages, partial_answer=answer_so_far)

    def _due(self) -> bool:
        now = time.monotonic()
        if now - self._flushed_at < self.FLUSH_EVERY_S:
            return False
        self._flushed_at = now
        return True


def query_run_create(
    *,
    workspace: Workspace,
    actor,
    question: str,
    mode: str = QueryMode.VERIFIED,
    threshold_override: float | None = None,
    actor_label: str = "",
    evaluation: bool = False,
) -> QueryRun:
    """A validated, queued question; `query_run_execute` answers it."""
    require(actor, "contribute", workspace=workspace)
    question = _clean_question(question)
    if mode not in QueryMode.values:
        raise ApplicationError(f"Unknown mode “{mode}”; use verified or naive.", field="mode")
    if threshold_override is not None and not 0 <= threshold_override <= 1:
        raise ApplicationError("threshold_override must be between 0 and 1.", field="threshold_override")
    user = actor.user if actor is not None else None
    label = actor_label or label_of(actor)
    return QueryRun.objects.create(
        workspace=workspace,
        question=question,
        mode=mode,
        threshold_override=threshold_override,
        asked_by=user,
        actor_label=label,
        evaluation=evaluation,
    )


def query_run_enqueue(**kwargs) -> QueryRun:
    """Create the run and hand it to a worker once the transaction commits."""
    from apps.queries.tasks import run_query

    with transaction.atomic():
        run = query_run_create(**kwargs)
        send_on_commit(run_query, str(run.workspace_id), str(run.pk))
    return run


def query_runs_reap_queued(*, now=None) -> dict[str, int]:
    """Send again the questions still queued after QUERY_REQUEUE_QUEUED_AFTER_S (their message
    was lost, e.g. Redis was down when they were asked); fail those nobody answered within
    QUERY_GIVE_UP_AFTER_S, with a message. A duplicate message is harmless: the run is claimed
    once. All workspaces: this runs from the scheduler."""
    from apps.queries.tasks import run_query

    now = now or timezone.now()
    queued = QueryRun.objects.filter(status=QueryStatus.QUEUED)
    failed = queued.filter(created_at__lt=now - timedelta(seconds=settings.QUERY_GIVE_UP_AFTER_S)).update(
        status=QueryStatus.FAILED, error="The question waited too long for a worker and was not answered; ask it again."
    )
    late = queued.filter(created_at__lt=now - timedelta(seconds=settings.QUERY_REQUEUE_QUEUED_AFTER_S))
    requeued = 0
    for workspace_id, pk in late.values_list("workspace_id", "pk"):
        send_on_commit(run_query, str(workspace_id), str(pk))
        requeued += 1
    return {"requeued": requeued, "failed": failed}


def query_answer(**kwargs) -> QueryRun:
    """Answer at once, in this process (the API's synchronous default, `manage.py ask`)."""
    run = query_run_create(**kwargs)
    return query_run_execute(workspace=run.workspace, run_id=run.pk)


def query_run_execute(*, workspace: Workspace, run_id) -> QueryRun | None:
    """Claim a queued run and answer it; a run already claimed by another worker is left alone."""
    claimed = QueryRun.objects.filter(workspace=workspace, pk=run_id, status=QueryStatus.QUEUED).update(status=QueryStatus.RUNNING)
    run = QueryRun.objects.select_related("asked_by").get(workspace=workspace, pk=run_id)
    if not claimed:
        return None if run.status == QueryStatus.RUNNING else run
    try:
        return _execute(workspace, run)
    except Exception as exc:
        QueryRun.objects.filter(pk=run.pk).update(
            status=QueryStatus.FAILED, error=f"The question could not be answered ({exc.__class__.__name__})."
        )
        raise


def _execute(workspace: Workspace, run: QueryRun) -> QueryRun:
    options = settings_get(workspace=workspace)
    started, progress = time.perf_counter(), _Progress(run)
    threshold = options.gate_threshold if run.threshold_override is None else run.threshold_override
    answer_params = replace(answer_params_for(options), gate_threshold=threshold)
    trace = answer(run.question, mode=run.mode, params=answer_params, tools=tools_for(workspace, options), clock=progress.clock)
    _fill_run(run, trace)
    run.duration_ms = int((time.perf_counter() - started) * 1000)
    with transaction.atomic():
        run.save()
        record = audit_record_create(
            workspace=workspace,
            asked_by=run.asked_by,
            actor_label=run.actor_label,
            query_run_id=run.pk,
            payload=_audit_payload(run, options, answer_params.retrieval, trace),
        )
    run.audit_record_id = record.pk  # as the selectors annotate it: the API answers without reading it back
    return run


def tools_for(workspace: Workspace, options: WorkspaceSettings) -> Tools:
    """The collaborators of one answer in `workspace`: its retrieval SQL, the process's models,
    the workspace's providers and, when a key is set, web search."""
    embedder = product_embedder()
    web = None
    if settings.TAVILY_API_KEY:
        web = TavilySearch(api_key=settings.TAVILY_API_KEY, base_url=settings.TAVILY_BASE_URL, timeout_s=settings.WEB_SEARCH_TIMEOUT_S)
    return Tools(
        embedder=embedder,
        reranker=get_reranker(settings.RERANKER_MODEL, embedder),
        search=lambda question, vector, params: chunk_search(workspace=workspace, question=question, query_vector=vector, params=params),
        local_judge=local_judge_get(),
        router=_router(options, embedder),
        web=web,
        answers=answer_reader_get(),
    )


@cache
def answer_reader_get() -> AnswerReader:
    """What reads each claim against the question, loaded once per process: the local judge's
    answerability of the claim's sentence, calibrated where a calibration was fitted for it."""
    judge = local_judge_get()
    return AnswerReader.of(f"{judge.name}-answerability", judge.answerability)


def local_judge_get() -> VerifierJudge:
    """The product's local judge, the trained verifier, loaded once per process: stage 2 of
    verification when no LLM grades a claim, and the gate's answerability."""
    return get_local_judge()


def answer_params_for(options: WorkspaceSettings) -> AnswerParams:
    return AnswerParams(
        retrieval=RetrievalParams(
            dense_k=options.dense_k,
            keyword_k=options.keyword_k,
            rrf_k=options.rrf_k,
            dense_weight=options.dense_weight,
            keyword_weight=options.keyword_weight,
        ),
        corrective=CorrectiveParams(upper=options.crag_upper, lower=options.crag_lower, strip_threshold=options.strip_threshold),
        trust=TrustWeights(
            retrieval=options.trust_weight_retrieval,
            agreement=options.trust_weight_agreement,
            grounding=options.trust_weight_grounding,
            low_cutoff=options.risk_low_cutoff,
            medium_cutoff=options.risk_medium_cutoff,
        ),
        gate_threshold=options.gate_threshold,
        rerank_top_n=options.rerank_top_n,
        locator_threshold=options.locator_threshold,
        answer_max_claims=options.answer_max_claims,
        web_search_enabled=options.web_search_enabled,
        web_results=options.web_results,
        target_precision=options.judge_target_precision,
    )


def _router(options, embedder) -> Router:
    providers = [
        LocalProvider(embedder) if spec.name == "local" else ChatProvider(spec, timeout_s=settings.LLM_TIMEOUT_S)
        for spec in provider_specs_get(options=options)
    ]
    return Router(providers, secrets=provider_secrets(options=options))


def _fill_run(run: QueryRun, trace: AnswerTrace) -> None:
    claims = [claim_row(v) for v in trace.verified]
    scores = {s.candidate.chunk_id: s.score for s in [*trace.retrieved.reranked, *trace.pool]}
    run.answer = trace.answer.text
    run.partial_answer = trace.answer.text
    run.insufficient = trace.answer.insufficient
    run.provider = trace.answer.provider
    run.claims = claims
    cited = chunk_citations_get(workspace=run.workspace, chunk_ids=[c.chunk_id for c in trace.sources if c.document_id != "web"])
    run.sources = [_source_row(i, c, cited) | {"rerank_score": scores[c.chunk_id]} for i, c in enumerate(trace.sources, 1)]
    run.grounding = (sum(c["faithful"] for c in claims) / len(claims)) if claims else None
    run.gate = asdict(trace.gate)
    run.attempts = trace.attempts
    trust = trace.trust
    run.trust = trust_row(trust)
    run.confidence = trust.confidence
    run.risk = trust.risk
    run.refusal = asdict(trace.refusal) if trace.refusal else None
    run.status = QueryStatus.DONE


def _audit_payload(run: QueryRun, options, params: RetrievalParams, trace: AnswerTrace) -> dict:
    # Evaluation traffic says so in its record (the history leaves it out unless asked); a
    # person's record keeps exactly the keys it always had.
    timings, candidates = trace.timings, trace.retrieved.candidates
    return ({"evaluation": True} if run.evaluation else {}) | {
        "recorded_at": timezone.now().isoformat(),
        "question": run.question,
        "mode": run.mode,
        "asked_by": {"user": run.asked_by.get_username() if run.asked_by else None, "label": run.actor_label},
        "settings": {
            "threshold_override": run.threshold_override,
            "chunk_size": options.chunk_size,
            "chunk_overlap": options.chunk_overlap,
            "web_results": options.web_results,
            "embedding_model": str(settings.EMBEDDING_MODEL),
            "retrieval": asdict(params),
            "gate_threshold": options.gate_threshold,
            "rerank_top_n": options.rerank_top_n,
            "crag_upper": options.crag_upper,
            "crag_lower": options.crag_lower,
            "strip_threshold": options.strip_threshold,
            "web_search_enabled": options.web_search_enabled,
            "locator_threshold": options.locator_threshold,
            "answer_max_claims": options.answer_max_claims,
            "provider_order": [spec.name for spec in provider_specs_get(options=options)],
            "trust_weights": [options.trust_weight_retrieval, options.trust_weight_agreement, options.trust_weight_grounding],
            "risk_cutoffs": [options.risk_low_cutoff, options.risk_medium_cutoff],
        },
        "stages": {
            "retrieve": {"candidates": [asdict(c) | {"text": None} for c in candidates], "ms": timings.get("retrieve")},
            "generate": {"provider": run.provider, "insufficient": run.insufficient, "answer": run.answer, "ms": timings.get("generate")},
            "verify": {"claims": run.claims, "ms": timings.get("verify")},
        },
        "provider_attempts": run.attempts,
        "grounding": run.grounding,
        "trust": run.trust | {"confidence": run.confidence, "risk": run.risk},
        "timings_ms": dict(timings),
        # What the answer page showed: the passages (with pages and scores) the claims cite,
        # each stage's status and detail as it completed, and the whole run's time.
        "sources": run.sources,
        "pipeline": run.stages,
        "duration_ms": run.duration_ms,
        "rerank": _rerank_trace(trace),
        "corrective": trace.corrective,
        "gate": asdict(trace.gate),
        "refusal": run.refusal,
    }


def _rerank_trace(trace: AnswerTrace) -> dict:
    return {
        "reranker": trace.reranker,
        "scores": [{"chunk_id": s.candidate.chunk_id, "score": s.score, "parts": s.parts} for s in trace.retrieved.reranked],
        "ms": trace.timings.get("rerank"),
    }


def trust_row(trust) -> dict:
    """A trust score's components and reasons as a run stores them (confidence and risk have columns)."""
    return {
        "retrieval": trust.retrieval,
        "agreement": trust.agreement,
        "grounding": trust.grounding,
        "answering": trust.answering,
        "reasons": list(trust.reasons),
    }


def claim_row(v) -> dict:
    return {
        "text": v.claim.text,
        "source": v.claim.source,
        "source_title": v.source_title,
        "quote": v.claim.quote,
        "quote_status": v.location.status,
        "locator": v.location.method,
        "locator_score": v.location.score,
        "locator_detail": v.location.detail,
        "start": v.location.start,
        "end": v.location.end,
        # A claim the local judge left unsure is stored as such, never as its tentative verdict
        # (kept apart, as local_verdict): it was not found wanting, only not checked.
        "verdict": UNSURE if v.outcome == UNSURE else v.verdict,
        "local_verdict": v.verdict if v.outcome == UNSURE else None,
        "judge": v.judge,
        "judge_score": v.judge_score,
        "rationale": v.rationale,
        # Whether it answers the question (apps/pipeline/answering.py): the scorer's raw score and
        # the calibrated probability; None where it was not read (not located, or no reader).
        "answer_score": v.answer_score,
        "answers": v.answers,
        "faithful": v.faithful,
        # verified / flagged / unsure, and the calibrated p(supports) it was decided from.
        "outcome": v.outcome,
        "p_supports": v.p_supports,
        # A quote missing from its cited source but found in another retrieved one.
        "misattributed": v.location.misattributed,
        "found_in": v.location.found_in,
        "found_start": v.location.found_start,
        "found_end": v.location.found_end,
    }


NOT_CITED = {"first_page": None, "last_page": None, "location": None}  # a web result


def _source_row(index: int, c, cited: dict[str, dict]) -> dict:
    return {
        "index": index,
        "document_id": c.document_id,
        "title": c.document_title,
        "chunk_id": c.chunk_id,
        "ordinal": c.ordinal,
        "text": c.text,
        "start": c.start,
        "end": c.end,
        "fused_score": c.fused_score,
        "dense_score": c.dense_score,
        "keyword_score": c.keyword_score,
        "url": c.url,
    } | cited.get(str(c.chunk_id), NOT_CITED)


def _clean_question(question: str) -> str:
    """The question held to the one text guard (`apps.core.guard`), its whitespace collapsed."""
    question = " ".join(clean_text(question or "", field="question").split())
    if not question:
        raise ApplicationError("Type a question.", field="question")
    return clean_text(question, field="question", max_length=settings.QUESTION_MAX_CHARS)


def answer_assess(*, workspace: Workspace, question: str, answer_text: str) -> Assessment:
    """Score an answer given from outside (an evaluation set, bench_trust) the way the pipeline
    scores its own (see `apps.pipeline.rescoring.assess`), with the workspace's settings and documents."""
    options = settings_get(workspace=workspace)
    return assess(question, answer_text, params=answer_params_for(options), tools=tools_for(workspace, options))
