"""The orchestration service: drives the pipeline stages for one question and records the answer."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, replace

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.audits.services import audit_record_create
from apps.core.errors import ApplicationError
from apps.pipeline.corrective import CORRECT, CorrectiveParams, classify, keep_for, keyword_rewrite, refine
from apps.pipeline.embedding import get_embedder
from apps.pipeline.gate import REFUSAL, confidence_gate
from apps.pipeline.generation import ExtractiveParams, local_extractive_answer
from apps.pipeline.rerank import get_reranker
from apps.pipeline.retrieval import RetrievalParams, hybrid_search
from apps.pipeline.types import Answer
from apps.pipeline.verification import verify_answer
from apps.pipeline.websearch import TavilySearch, WebSearchError, as_candidates
from apps.queries.models import QueryMode, QueryRun, QueryStatus
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import settings_get


class _Timings(dict):
    @contextmanager
    def stage(self, name: str):
        started = time.perf_counter()
        yield
        self[name] = round((time.perf_counter() - started) * 1000, 2)


def query_answer(
    *,
    workspace: Workspace,
    actor,
    question: str,
    mode: str = QueryMode.VERIFIED,
    threshold_override: float | None = None,
    actor_label: str = "",
) -> QueryRun:
    question = _clean_question(question)
    if mode not in QueryMode.values:
        raise ApplicationError(f"Unknown mode “{mode}”; use verified or naive.", field="mode")
    if threshold_override is not None and not 0 <= threshold_override <= 1:
        raise ApplicationError("threshold_override must be between 0 and 1.", field="threshold_override")
    options = settings_get(workspace=workspace)
    run = QueryRun.objects.create(workspace=workspace, question=question, mode=mode, status=QueryStatus.RUNNING, asked_by=actor)
    started, timings = time.perf_counter(), _Timings()
    embedder = get_embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)
    with timings.stage("embed_question"):
        query_vector = embedder.embed([question])[0]
    params = _retrieval_params(options)
    with timings.stage("retrieve"), transaction.atomic(), connection.cursor() as cursor:
        candidates = hybrid_search(cursor, workspace_id=workspace.pk, question=question, query_vector=query_vector, params=params)
    reranker = get_reranker(settings.RERANKER_MODEL, embedder)
    with timings.stage("rerank"):
        reranked = reranker.rerank(question, query_vector, candidates)
    if mode == QueryMode.VERIFIED:
        pool, corrective = _correct(question, query_vector, reranked, reranker, embedder, options, timings)
    else:  # naive mode is plain RAG: no correction, no gate
        pool, corrective = reranked[: options.rerank_top_n], {"applied": False}
    threshold = options.gate_threshold if threshold_override is None else threshold_override
    gate = confidence_gate(
        [s.score for s in pool], threshold=threshold, enabled=mode == QueryMode.VERIFIED, empty_reason=_empty_reason(reranked, corrective)
    )
    refined = _refine(pool, query_vector, embedder, options, corrective, timings)
    sources = [s.candidate for s in pool]
    answer, verified = _answer(gate, query_vector, sources, refined, embedder, options, timings)

    scores = {s.candidate.chunk_id: s.score for s in [*reranked, *pool]}
    _fill_run(run, answer, verified, sources, scores, gate)
    run.duration_ms = int((time.perf_counter() - started) * 1000)
    trace = {"rerank": _rerank_trace(reranker, reranked, timings), "corrective": corrective, "gate": asdict(gate)}
    with transaction.atomic():
        run.save()
        audit_record_create(
            workspace=workspace,
            actor=actor,
            actor_label=actor_label or (actor.get_username() if actor else "anonymous"),
            query_run_id=run.pk,
            payload=_audit_payload(run, options, params, candidates, timings) | trace,
        )
    return run


def _correct(question, query_vector, reranked, reranker, embedder, options, timings: _Timings):
    """Corrective RAG: classify retrieval, keep what bears on the question, ask the web when
    retrieval was not Correct and the workspace allows it. Returns the pool and its trace."""
    params = _corrective_params(options)
    verdict = classify([s.score for s in reranked], params)
    kept = keep_for(verdict, reranked, params)
    trace = {"applied": True, "verdict": verdict, "params": asdict(params), "kept": [s.candidate.chunk_id for s in kept]}
    web = []
    if verdict != CORRECT:
        web, trace["web"] = _web_search(question, query_vector, reranker, options, timings)
    pool = sorted([*kept, *web], key=lambda s: (-s.score, s.candidate.chunk_id))[: options.rerank_top_n]
    trace["pool"] = [{"chunk_id": s.candidate.chunk_id, "score": s.score, "web": s.candidate.url is not None} for s in pool]
    return pool, trace


def _empty_reason(reranked, corrective: dict) -> str:
    if not reranked:
        return "no passage was retrieved"
    best = max(s.score for s in reranked)
    lower = corrective.get("params", {}).get("lower", 0.0)
    web = "" if corrective.get("web", {}).get("results") else " and the web added nothing"
    return f"retrieval was {corrective.get('verdict', 'incorrect')}: the best relevance {best:.3f} is below the lower threshold {lower:.3f}{web}"


def _web_search(question, query_vector, reranker, options, timings: _Timings) -> tuple[list, dict]:
    if not options.web_search_enabled:
        return [], {"searched": False, "reason": "web search is off for this workspace"}
    if not settings.TAVILY_API_KEY:
        return [], {"searched": False, "reason": "no TAVILY_API_KEY is configured"}
    query = keyword_rewrite(question)
    search = TavilySearch(api_key=settings.TAVILY_API_KEY, base_url=settings.TAVILY_BASE_URL, timeout_s=settings.WEB_SEARCH_TIMEOUT_S)
    try:
        with timings.stage("web_search"):
            results = search.search(query, max_results=options.web_results)
    except WebSearchError as exc:
        return [], {"searched": True, "provider": search.name, "query": query, "rewrite": "local keywords", "error": str(exc)}
    scored = reranker.rerank(question, query_vector, as_candidates(results))
    found = [{"url": s.candidate.url, "title": s.candidate.document_title, "score": s.score} for s in scored]
    return scored, {"searched": True, "provider": search.name, "query": query, "rewrite": "local keywords", "results": found}


def _refine(pool, query_vector, embedder, options, corrective: dict, timings: _Timings) -> dict:
    """chunk id → the text the generator sees (verified mode strips passages to their strongest sentences)."""
    if not corrective.get("applied") or not pool:
        return {}
    with timings.stage("refine"):
        refined = refine(pool, query_vector, embedder, _corrective_params(options))
    corrective["refined"] = [
        {
            "chunk_id": r.scored.candidate.chunk_id,
            "kept_sentences": r.kept_sentences,
            "sentences": r.total_sentences,
            "whole_chunk": r.whole_chunk,
        }
        for r in refined
    ]
    return {r.scored.candidate.chunk_id: r.text for r in refined}


def _corrective_params(options) -> CorrectiveParams:
    return CorrectiveParams(upper=options.crag_upper, lower=options.crag_lower, strip_threshold=options.strip_threshold)


def _answer(gate, query_vector, sources, refined: dict, embedder, options, timings: _Timings):
    """Generate from the refined texts and verify against the whole passages, unless the
    gate refused: a refusal costs no generation."""
    if not gate.passed:
        return Answer(text=REFUSAL, claims=(), insufficient=True, provider="gate"), []
    seen = [replace(c, text=refined.get(c.chunk_id, c.text)) for c in sources]
    with timings.stage("generate"):
        answer = local_extractive_answer(query_vector, seen, embedder, ExtractiveParams(max_claims=options.answer_max_claims))
    with timings.stage("verify"):
        verified = verify_answer(answer, sources, locator_threshold=options.locator_threshold)
    return answer, verified


def _fill_run(run: QueryRun, answer: Answer, verified, sources, scores: dict, gate) -> None:
    claims = [_claim_row(v) for v in verified]
    run.answer = answer.text
    run.insufficient = answer.insufficient
    run.provider = answer.provider
    run.claims = claims
    run.sources = [_source_row(i, c) | {"rerank_score": scores[c.chunk_id]} for i, c in enumerate(sources, 1)]
    run.grounding = (sum(c["faithful"] for c in claims) / len(claims)) if claims else None
    run.gate = asdict(gate)
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
    return {
        "recorded_at": timezone.now().isoformat(),
        "question": run.question,
        "mode": run.mode,
        "settings": {
            "retrieval": asdict(params),
            "gate_threshold": options.gate_threshold,
            "rerank_top_n": options.rerank_top_n,
            "crag_upper": options.crag_upper,
            "crag_lower": options.crag_lower,
            "strip_threshold": options.strip_threshold,
            "web_search_enabled": options.web_search_enabled,
            "locator_threshold": options.locator_threshold,
            "answer_max_claims": options.answer_max_claims,
        },
        "stages": {
            "retrieve": {"candidates": [asdict(c) | {"text": None} for c in candidates], "ms": timings.get("retrieve")},
            "generate": {"provider": run.provider, "insufficient": run.insufficient, "answer": run.answer, "ms": timings.get("generate")},
            "verify": {"claims": run.claims, "ms": timings.get("verify")},
        },
        "provider_attempts": [] if run.provider == "gate" else [{"provider": run.provider, "outcome": "ok", "ms": timings.get("generate")}],
        "grounding": run.grounding,
        "timings_ms": dict(timings),
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
        "start": v.location.start,
        "end": v.location.end,
        "verdict": v.verdict,
        "judge": v.judge,
        "faithful": v.faithful,
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
    }


def _clean_question(question: str) -> str:
    question = " ".join((question or "").split())
    if not question:
        raise ApplicationError("Type a question.", field="question")
    if len(question) > settings.QUESTION_MAX_CHARS:
        raise ApplicationError(f"Questions are limited to {settings.QUESTION_MAX_CHARS} characters.", field="question")
    return question
