"""The orchestration service: drives the pipeline stages for one question and records the answer."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.audits.services import audit_record_create
from apps.core.errors import ApplicationError
from apps.pipeline.embedding import get_embedder
from apps.pipeline.gate import REFUSAL, confidence_gate
from apps.pipeline.generation import ExtractiveParams, local_extractive_answer
from apps.pipeline.rerank import get_reranker
from apps.pipeline.retrieval import RetrievalParams, hybrid_search
from apps.pipeline.types import Answer
from apps.pipeline.verification import verify_answer
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
    threshold = options.gate_threshold if threshold_override is None else threshold_override
    gate = confidence_gate([s.score for s in reranked], threshold=threshold, enabled=mode == QueryMode.VERIFIED)
    sources = [s.candidate for s in reranked[: options.rerank_top_n]]
    answer, verified = _answer(gate, query_vector, sources, embedder, options, timings)

    scores = {s.candidate.chunk_id: s.score for s in reranked}
    _fill_run(run, answer, verified, sources, scores, gate)
    run.duration_ms = int((time.perf_counter() - started) * 1000)
    trace = {"rerank": _rerank_trace(reranker, reranked, timings), "gate": asdict(gate)}
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


def _answer(gate, query_vector, sources, embedder, options, timings: _Timings):
    """Generate and verify, unless the gate refused: a refusal costs no generation."""
    if not gate.passed:
        return Answer(text=REFUSAL, claims=(), insufficient=True, provider="gate"), []
    with timings.stage("generate"):
        answer = local_extractive_answer(query_vector, sources, embedder, ExtractiveParams(max_claims=options.answer_max_claims))
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
    }


def _clean_question(question: str) -> str:
    question = " ".join((question or "").split())
    if not question:
        raise ApplicationError("Type a question.", field="question")
    if len(question) > settings.QUESTION_MAX_CHARS:
        raise ApplicationError(f"Questions are limited to {settings.QUESTION_MAX_CHARS} characters.", field="question")
    return question
