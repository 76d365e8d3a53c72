"""The orchestration service: drives the pipeline stages for one question and records the answer."""

from __future__ import annotations

import time
import unicodedata
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.audits.services import audit_record_create
from apps.core.broker import send_on_commit
from apps.core.errors import ApplicationError
from apps.documents.selectors import chunk_pages_get
from apps.pipeline.corrective import CORRECT, CorrectiveParams, classify, keep_for, keyword_rewrite, refine
from apps.pipeline.embedding import get_embedder
from apps.pipeline.gate import REFUSAL, confidence_gate
from apps.pipeline.generation import cite_sentences
from apps.pipeline.judge import get_local_judge
from apps.pipeline.llm_judge import LLMJudge
from apps.pipeline.prompting import parse_rewrite, rewrite_messages
from apps.pipeline.providers import ChatProvider, GenerationRequest, LocalProvider, Router
from apps.pipeline.rerank import get_reranker
from apps.pipeline.retrieval import RetrievalParams, hybrid_search
from apps.pipeline.trust import Trust, TrustWeights, source_agreement, trust_score
from apps.pipeline.types import Answer
from apps.pipeline.verification import verify_answer
from apps.pipeline.websearch import TavilySearch, WebSearchError, as_candidates
from apps.queries.models import QueryMode, QueryRun, QueryStatus
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import provider_secrets, provider_specs_get, settings_get


class _Progress:
    """Times each stage and records it on the run as it completes, with the answer text as it
    streams, so the Ask page can show both live."""

    FLUSH_EVERY_S = 0.25

    def __init__(self, run: QueryRun):
        self.run = run
        self.timings: dict[str, float] = {}
        self._flushed_at = 0.0

    @contextmanager
    def stage(self, name: str):
        started = time.perf_counter()
        note: dict = {}
        yield note
        self.timings[name] = round((time.perf_counter() - started) * 1000, 2)
        self.mark(name, "done", note.get("detail", ""))

    def mark(self, name: str, status: str, detail: str = "") -> None:
        self.run.stages = [*self.run.stages, {"name": name, "status": status, "ms": self.timings.get(name), "detail": detail}]
        QueryRun.objects.filter(pk=self.run.pk).update(stages=self.run.stages)

    def text(self, answer_so_far: str) -> None:
        now = time.monotonic()
        if answer_so_far and now - self._flushed_at < self.FLUSH_EVERY_S:
            return
        self._flushed_at = now
        QueryRun.objects.filter(pk=self.run.pk).update(partial_answer=answer_so_far)


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
    question = _clean_question(question)
    if mode not in QueryMode.values:
        raise ApplicationError(f"Unknown mode “{mode}”; use verified or naive.", field="mode")
    if threshold_override is not None and not 0 <= threshold_override <= 1:
        raise ApplicationError("threshold_override must be between 0 and 1.", field="threshold_override")
    label = actor_label or (actor.get_username() if actor else "anonymous")
    return QueryRun.objects.create(
        workspace=workspace,
        question=question,
        mode=mode,
        threshold_override=threshold_override,
        asked_by=actor,
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
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    params = _retrieval_params(options)
    with progress.stage("retrieve") as note:
        query_vector = embedder.embed([run.question])[0]
        with transaction.atomic(), connection.cursor() as cursor:
            candidates = hybrid_search(cursor, workspace_id=workspace.pk, question=run.question, query_vector=query_vector, params=params)
        note["detail"] = f"{len(candidates)} passages"
    reranker = get_reranker(settings.RERANKER_MODEL, embedder)
    with progress.stage("rerank") as note:
        reranked = reranker.rerank(run.question, query_vector, candidates)
        note["detail"] = f"{reranker.name}" + (f", best {reranked[0].score:.3f}" if reranked else "")
    router = _router(options, embedder)
    if run.mode == QueryMode.VERIFIED:
        pool, corrective = _correct(run.question, query_vector, reranked, reranker, options, progress, router)
    else:  # naive mode is plain RAG: no correction, no gate
        pool, corrective = reranked[: options.rerank_top_n], {"applied": False}
        progress.mark("correct", "skipped", "naive mode")
    threshold = options.gate_threshold if run.threshold_override is None else run.threshold_override
    verified_mode = run.mode == QueryMode.VERIFIED
    gate = confidence_gate(
        [s.score for s in pool],
        threshold=threshold,
        enabled=verified_mode,
        answerability=_answerability(run.question, pool, progress.timings) if verified_mode else None,
        empty_reason=_empty_reason(reranked, corrective),
    )
    progress.mark("gate", "done" if gate.enabled else "skipped", gate.reason)
    refined = _refine(pool, query_vector, embedder, options, corrective, progress)
    sources = [s.candidate for s in pool]
    answer, attempts, verified = _answer(run, gate, query_vector, sources, refined, router, options, progress)
    with progress.stage("score") as note:
        trust = _trust(answer, verified, pool, options)
        note["detail"] = f"confidence {trust.confidence:.0%}, {trust.risk} risk"

    scores = {s.candidate.chunk_id: s.score for s in [*reranked, *pool]}
    _fill_run(run, answer, verified, sources, scores, gate, attempts, trust)
    run.duration_ms = int((time.perf_counter() - started) * 1000)
    trace = {"rerank": _rerank_trace(reranker, reranked, progress.timings), "corrective": corrective, "gate": asdict(gate)}
    with transaction.atomic():
        run.save()
        audit_record_create(
            workspace=workspace,
            actor=run.asked_by,
            actor_label=run.actor_label,
            query_run_id=run.pk,
            payload=_audit_payload(run, options, params, candidates, progress.timings) | trace,
        )
    return run


def _correct(question, query_vector, reranked, reranker, options, progress: _Progress, router: Router):
    """Corrective RAG: classify retrieval, keep what bears on the question, ask the web when
    retrieval was not Correct and the workspace allows it. Returns the pool and its trace."""
    with progress.stage("correct") as note:
        params = _corrective_params(options)
        verdict = classify([s.score for s in reranked], params)
        kept = keep_for(verdict, reranked, params)
        trace = {"applied": True, "verdict": verdict, "params": asdict(params), "kept": [s.candidate.chunk_id for s in kept]}
        web = []
        if verdict != CORRECT:
            web, trace["web"] = _web_search(question, query_vector, reranker, options, progress.timings, router)
        pool = sorted([*kept, *web], key=lambda s: (-s.score, s.candidate.chunk_id))[: options.rerank_top_n]
        trace["pool"] = [{"chunk_id": s.candidate.chunk_id, "score": s.score, "web": s.candidate.url is not None} for s in pool]
        note["detail"] = f"retrieval {verdict}, {len(kept)} passages kept" + (f", {len(web)} from the web" if web else "")
    return pool, trace


def _answerability(question: str, pool, timings: dict) -> float | None:
    """The local judge's belief that the best passage answers the question: the question read
    as a claim against the passage's sentence the reranker found closest to it (None without a
    passage). Local on purpose: it is asked of every question, before any provider is paid."""
    if not pool:
        return None
    started = time.perf_counter()
    best = max(pool, key=lambda s: s.score)
    text = best.candidate.text
    start = text.find(best.best_sentence) if best.best_sentence else -1
    span = (start, start + len(best.best_sentence)) if start >= 0 else (0, len(text))
    probability = get_local_judge().support_probability(question, text, *span)
    timings["answerability"] = round((time.perf_counter() - started) * 1000, 2)
    return round(probability, 6)


def _empty_reason(reranked, corrective: dict) -> str:
    if not reranked:
        return "no passage was retrieved"
    best = max(s.score for s in reranked)
    lower = corrective.get("params", {}).get("lower", 0.0)
    web = "" if corrective.get("web", {}).get("results") else " and the web added nothing"
    return f"retrieval was {corrective.get('verdict', 'incorrect')}: the best relevance {best:.3f} is below the lower threshold {lower:.3f}{web}"


def _web_search(question, query_vector, reranker, options, timings: dict, router: Router) -> tuple[list, dict]:
    if not options.web_search_enabled:
        return [], {"searched": False, "reason": "web search is off for this workspace"}
    if not settings.TAVILY_API_KEY:
        return [], {"searched": False, "reason": "no TAVILY_API_KEY is configured"}
    query, rewrite = _rewrite(question, router)
    search = TavilySearch(api_key=settings.TAVILY_API_KEY, base_url=settings.TAVILY_BASE_URL, timeout_s=settings.WEB_SEARCH_TIMEOUT_S)
    try:
        started = time.perf_counter()
        results = search.search(query, max_results=options.web_results)
        timings["web_search"] = round((time.perf_counter() - started) * 1000, 2)
    except WebSearchError as exc:
        return [], {"searched": True, "provider": search.name, "query": query, "rewrite": rewrite, "error": str(exc)}
    scored = reranker.rerank(question, query_vector, as_candidates(results))
    found = [{"url": s.candidate.url, "title": s.candidate.document_title, "score": s.score} for s in scored]
    return scored, {"searched": True, "provider": search.name, "query": query, "rewrite": rewrite, "results": found}


def _rewrite(question: str, router: Router) -> tuple[str, dict]:
    """The web search query: an LLM's rewrite when a provider is configured, else the
    question's content words."""
    query, attempts = router.first_reply(rewrite_messages(question), parse_rewrite)
    used = next((a.provider for a in attempts if a.outcome == "ok"), "local keywords")
    return query or keyword_rewrite(question), {"by": used, "attempts": [asdict(a) for a in attempts]}


def _refine(pool, query_vector, embedder, options, corrective: dict, progress: _Progress) -> dict:
    """chunk id → the text the generator sees (verified mode strips passages to their strongest sentences)."""
    if not corrective.get("applied") or not pool:
        return {}
    started = time.perf_counter()
    refined = refine(pool, query_vector, embedder, _corrective_params(options))
    progress.timings["refine"] = round((time.perf_counter() - started) * 1000, 2)
    corrective["refined"] = [
        {
            "chunk_id": r.scored.candidate.chunk_id,
            "kept_sentences": r.kept_sentences,
            "sentences": r.total_sentences,
            "whole_chunk": r.whole_chunk,
            "text": r.text,
        }
        for r in refined
    ]
    return {r.scored.candidate.chunk_id: r.text for r in refined}


def _corrective_params(options) -> CorrectiveParams:
    return CorrectiveParams(upper=options.crag_upper, lower=options.crag_lower, strip_threshold=options.strip_threshold)


def _answer(run, gate, query_vector, sources, refined: dict, router: Router, options, progress: _Progress):
    """Generate from the refined texts through the provider router and verify against the
    whole passages, unless the gate refused: a refusal costs no generation."""
    if not gate.passed:
        for name in ("generate", "verify"):
            progress.mark(name, "skipped", "refused by the confidence gate")
        return Answer(text=REFUSAL, claims=(), insufficient=True, provider="gate"), [], []
    seen = [replace(c, text=refined.get(c.chunk_id, c.text)) for c in sources]
    request = GenerationRequest(run.question, query_vector, seen, options.answer_max_claims)
    with progress.stage("generate") as note:
        answer, attempts = router.generate(request, progress.text)
        note["detail"] = " → ".join(f"{a.provider} {a.outcome}" for a in attempts)
    judge = LLMJudge(router, get_local_judge()) if router.can_chat else get_local_judge()
    with progress.stage("verify") as note:
        verified = verify_answer(answer, sources, locator_threshold=options.locator_threshold, judge=judge)
        note["detail"] = f"{sum(v.faithful for v in verified)} of {len(verified)} claims faithful, judged by {judge.name}"
    rows = [asdict(a) | {"purpose": "generate"} for a in attempts]
    return answer, rows + [asdict(a) | {"purpose": "judge"} for a in getattr(judge, "attempts", [])], verified


def _router(options, embedder) -> Router:
    providers = [
        LocalProvider(embedder) if spec.name == "local" else ChatProvider(spec, timeout_s=settings.LLM_TIMEOUT_S)
        for spec in provider_specs_get(options=options)
    ]
    return Router(providers, secrets=provider_secrets(options=options))


def _trust(answer: Answer, verified, pool, options) -> Trust:
    weights = TrustWeights(
        retrieval=options.trust_weight_retrieval,
        agreement=options.trust_weight_agreement,
        grounding=options.trust_weight_grounding,
        low_cutoff=options.risk_low_cutoff,
        medium_cutoff=options.risk_medium_cutoff,
    )
    retrieval = max((s.score for s in pool), default=None)
    refused = answer.insufficient and not verified
    agreement = 0.0 if refused else source_agreement(verified)
    return trust_score(retrieval=retrieval, agreement=agreement, verified=verified, refused=refused, weights=weights)


def _fill_run(run: QueryRun, answer: Answer, verified, sources, scores: dict, gate, attempts: list[dict], trust: Trust) -> None:
    claims = [_claim_row(v) for v in verified]
    run.answer = answer.text
    run.partial_answer = answer.text
    run.insufficient = answer.insufficient
    run.provider = answer.provider
    run.claims = claims
    run.sources = [_source_row(i, c) | {"rerank_score": scores[c.chunk_id]} for i, c in enumerate(sources, 1)]
    run.grounding = (sum(c["faithful"] for c in claims) / len(claims)) if claims else None
    run.gate = asdict(gate)
    run.attempts = attempts
    run.trust = {"retrieval": trust.retrieval, "agreement": trust.agreement, "grounding": trust.grounding, "reasons": list(trust.reasons)}
    run.confidence = trust.confidence
    run.risk = trust.risk
    run.status = QueryStatus.DONE


def _retrieval_params(options) -> RetrievalParams:
    return RetrievalParams(
        dense_k=options.dense_k,
        keyword_k=options.keyword_k,
        rrf_k=options.rrf_k,
        dense_weight=options.dense_weight,
        keyword_weight=options.keyword_weight,
    )


def _audit_payload(run: QueryRun, options, params: RetrievalParams, candidates, timings: dict) -> dict:
    # Evaluation traffic says so in its record (the history leaves it out unless asked); a
    # person's record keeps exactly the keys it always had.
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
    }


def _rerank_trace(reranker, reranked, timings: dict) -> dict:
    return {
        "reranker": reranker.name,
        "scores": [{"chunk_id": s.candidate.chunk_id, "score": s.score, "parts": s.parts} for s in reranked],
        "ms": timings.get("rerank"),
    }


def _claim_row(v) -> dict:
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
        "verdict": v.verdict,
        "judge": v.judge,
        "judge_score": v.judge_score,
        "rationale": v.rationale,
        "faithful": v.faithful,
        # A quote missing from its cited source but found in another retrieved one.
        "misattributed": v.location.misattributed,
        "found_in": v.location.found_in,
        "found_start": v.location.found_start,
        "found_end": v.location.found_end,
    }


def _source_row(index: int, c) -> dict:
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
    } | _pages(c)


def _pages(c) -> dict:
    """Page numbers for a PDF passage (null for other documents and web results)."""
    first, last = chunk_pages_get(document_id=c.document_id, chunk_id=c.chunk_id) or (None, None)
    return {"first_page": first, "last_page": last}


def _clean_question(question: str) -> str:
    question = " ".join((question or "").split())
    if not question:
        raise ApplicationError("Type a question.", field="question")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in question):
        raise ApplicationError("The question holds control characters or broken Unicode; send plain text.", field="question")
    if len(question) > settings.QUESTION_MAX_CHARS:
        raise ApplicationError(f"Questions are limited to {settings.QUESTION_MAX_CHARS} characters.", field="question")
    return question


@dataclass(frozen=True)
class Assessment:
    """The verdicts and trust score of an answer that was written elsewhere."""

    claims: list
    trust: Trust
    sources: list


def answer_assess(*, workspace: Workspace, question: str, answer_text: str) -> Assessment:
    """Score an answer given from outside (an evaluation set, bench_trust) the way the pipeline
    scores its own: retrieve and rerank for the question, cite each sentence of the answer to the
    retrieved sentence closest to it, verify the claims and compute the trust components."""
    options = settings_get(workspace=workspace)
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    query_vector = embedder.embed([question])[0]
    with transaction.atomic(), connection.cursor() as cursor:
        candidates = hybrid_search(
            cursor, workspace_id=workspace.pk, question=question, query_vector=query_vector, params=_retrieval_params(options)
        )
    pool = get_reranker(settings.RERANKER_MODEL, embedder).rerank(question, query_vector, candidates)[: options.rerank_top_n]
    sources = [s.candidate for s in pool]
    claims = tuple(cite_sentences(question, answer_text, sources, embedder))
    answer = Answer(text=answer_text, claims=claims, insufficient=not claims, provider="external")
    verified = verify_answer(answer, sources, locator_threshold=options.locator_threshold)
    return Assessment(claims=verified, trust=_trust(answer, verified, pool, options), sources=sources)
