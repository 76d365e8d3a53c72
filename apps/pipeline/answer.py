"""One answer, stage by stage: the order of the pipeline in one readable function.

`answer()` runs retrieve → rerank → correct → gate → generate → verify → score on plain data,
with every collaborator passed in (`Tools`) and every setting in force passed in
(`AnswerParams`), and returns the whole trace (`AnswerTrace`). It knows no Django: the caller
(queries.services) loads the workspace's settings, builds the tools, persists the run and writes
the audit record. `retrieve_and_rerank()` is its first two stages alone, for callers that score
an answer written elsewhere or measure retrieval (`apps/pipeline/rescoring.py` scores answers
written elsewhere and judges earlier ones again, with the judge `answer()` uses).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from apps.pipeline.answering import AnswerReader, answering
from apps.pipeline.corrective import CORRECT, CorrectiveParams, classify, keep_for, keyword_rewrite, refine
from apps.pipeline.embedding import unpack_vectors
from apps.pipeline.gate import REFUSAL, GateDecision, confidence_gate, unmatched_terms
from apps.pipeline.judging.selective import DEFAULT_TARGET_PRECISION
from apps.pipeline.llm_judge import LLMJudge
from apps.pipeline.prompting import parse_rewrite, rewrite_messages
from apps.pipeline.providers import GenerationRequest, Router
from apps.pipeline.rerank import Reranker, Scored
from apps.pipeline.retrieval import RetrievalParams
from apps.pipeline.text import first_table_header, under_heading, unit_reads
from apps.pipeline.trust import REFUSED, Trust, TrustWeights, source_agreement, trust_score
from apps.pipeline.types import Answer, Candidate, VerifiedClaim
from apps.pipeline.verification import passage_window, verify_answer
from apps.pipeline.websearch import WebSearchError, as_candidates

VERIFIED, NAIVE = "verified", "naive"

# The retrieval SQL, bound to one workspace by the caller: (question, its vector, params) → candidates.
Search = Callable[[str, np.ndarray, RetrievalParams], list[Candidate]]
OnStage = Callable[[str, str, float | None, str], None]  # name, status, ms, detail


@dataclass(frozen=True)
class AnswerParams:
    """The workspace's settings in force for one answer (with the request's override), as the pipeline reads them."""

    retrieval: RetrievalParams
    corrective: CorrectiveParams
    trust: TrustWeights
    gate_threshold: float
    rerank_top_n: int
    locator_threshold: float
    answer_max_claims: int
    web_search_enabled: bool = False
    web_results: int = 5
    target_precision: float = DEFAULT_TARGET_PRECISION  # the local judge's, for verified / flagged / unsure


@dataclass(frozen=True)
class Tools:
    """The collaborators an answer needs; tests and benchmarks pass their own."""

    embedder: object
    reranker: Reranker
    search: Search
    local_judge: object
    router: Router | None = None
    web: object | None = None  # a web search client (`.name`, `.search(query, max_results)`), or None
    web_missing: str = "no TAVILY_API_KEY is configured"  # why `web` is None, for the trace
    answers: AnswerReader | None = None  # reads each located claim against the question; None: not read


class StageClock:
    """Times each stage and reports it as it completes (the Ask page shows them live);
    `on_text` receives the answer text as it streams."""

    def __init__(self, on_stage: OnStage | None = None, on_text: Callable[[str], None] | None = None):
        self.timings: dict[str, float] = {}
        self._on_stage = on_stage or (lambda *args: None)
        self.text = on_text or (lambda text: None)

    @contextmanager
    def stage(self, name: str) -> Iterator[dict]:
        """A reported stage; set `note["detail"]` inside it."""
        note: dict = {}
        with self.timed(name):
            yield note
        self.mark(name, "done", note.get("detail", ""))

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """A timing only (sub-steps: answerability, refine, web_search)."""
        started = time.perf_counter()
        yield
        self.timings[name] = round((time.perf_counter() - started) * 1000, 2)

    def mark(self, name: str, status: str, detail: str = "") -> None:
        self._on_stage(name, status, self.timings.get(name), detail)


@dataclass(frozen=True)
class Retrieved:
    query_vector: np.ndarray
    candidates: list[Candidate]
    reranked: list[Scored]


@dataclass(frozen=True)
class Refusal:
    """Who refused and on what evidence: the gate (its score against its threshold), the
    corrective step (no passage above its lower threshold), or the provider (nothing in the
    passages answered; the gate's evidence, which passed, is kept)."""

    by: str  # "gate" | "corrective" | "provider"
    reason: str
    provider: str | None = None
    relevance: float | None = None
    answerability: float | None = None
    score: float | None = None  # the score held to the threshold
    threshold: float | None = None
    threshold_name: str = ""


def refusal_of(gate: GateDecision, reply: Answer, reranked: list[Scored], corrective: dict) -> Refusal:
    evidence = {"relevance": gate.relevance, "answerability": gate.answerability}
    if gate.passed:
        return Refusal(
            "provider",
            reply.text,
            reply.provider,
            **evidence,
            score=gate.top_score,
            threshold=gate.threshold if gate.enabled else None,
            threshold_name="the gate threshold (passed)" if gate.enabled else "",
        )
    if gate.top_score is not None:
        return Refusal("gate", gate.reason, **evidence, score=gate.top_score, threshold=gate.threshold, threshold_name="the gate threshold")
    if reranked:  # passages were found, but none above corrective RAG's lower threshold was kept
        best = max(s.score for s in reranked)
        lower = corrective.get("params", {}).get("lower")
        return Refusal(
            "corrective", gate.reason, relevance=best, score=best, threshold=lower, threshold_name="the lower corrective threshold"
        )
    return Refusal("gate", gate.reason, threshold=gate.threshold, threshold_name="the gate threshold")


@dataclass(frozen=True)
class AnswerTrace:
    """Everything an answer's stages saw and decided, in order."""

    question: str
    mode: str
    retrieved: Retrieved
    corrective: dict
    pool: list[Scored]
    gate: GateDecision
    answer: Answer
    verified: list[VerifiedClaim]
    attempts: list[dict]
    trust: Trust
    reranker: str
    timings: dict[str, float] = field(default_factory=dict)
    refusal: Refusal | None = None

    @property
    def sources(self) -> list[Candidate]:
        return [s.candidate for s in self.pool]


def answer(question: str, *, mode: str, params: AnswerParams, tools: Tools, clock: StageClock | None = None) -> AnswerTrace:
    """Answer one question in `mode` (verified or naive) and return the whole trace."""
    clock = clock or StageClock()
    verified_mode = mode == VERIFIED
    # 1–2. Retrieve the workspace's candidates and rerank them.
    retrieved = retrieve_and_rerank(question, params=params, tools=tools, clock=clock)
    # 3. Correct (verified mode): keep what bears on the question, ask the web when retrieval is not Correct.
    if verified_mode:
        pool, corrective = _correct(question, retrieved, params, tools, clock)
    else:  # naive mode is plain RAG: no correction, no gate
        pool, corrective = retrieved.reranked[: params.rerank_top_n], {"applied": False}
        clock.mark("correct", "skipped", "naive mode")
    # 4. Gate: refuse before generating when the best passage is not relevant or does not answer.
    gate = _gate(question, pool, retrieved.reranked, corrective, params, tools, clock, enabled=verified_mode)
    # 5–6. Generate from the refined passages and verify every claim against the whole ones.
    refined = _refine(pool, retrieved.query_vector, corrective, params, tools, clock)
    reply, attempts, verified = _generate_and_verify(question, gate, retrieved.query_vector, pool, refined, params, tools, clock)
    # 7. Score trust.
    with clock.stage("score") as note:
        trust = answer_trust(reply, verified, pool, params.trust)
        refusal = refusal_of(gate, reply, retrieved.reranked, corrective) if trust.risk == REFUSED else None
        note["detail"] = (
            f"refused by {refusal.by}: no confidence given" if refusal else f"confidence {trust.confidence:.0%}, {trust.risk} risk"
        )
    return AnswerTrace(
        question, mode, retrieved, corrective, pool, gate, reply, verified, attempts, trust, tools.reranker.name, clock.timings, refusal
    )


def retrieve_and_rerank(question: str, *, params: AnswerParams, tools: Tools, clock: StageClock | None = None) -> Retrieved:
    clock = clock or StageClock()
    with clock.stage("retrieve") as note:
        query_vector = tools.embedder.embed([question])[0]
        candidates = tools.search(question, query_vector, params.retrieval)
        note["detail"] = f"{len(candidates)} passages"
    with clock.stage("rerank") as note:
        recall_stored_units(candidates, tools.embedder)
        reranked = tools.reranker.rerank(question, query_vector, candidates)
        note["detail"] = f"{tools.reranker.name}" + (f", best {reranked[0].score:.3f}" if reranked else "")
    return Retrieved(query_vector, candidates, reranked)


def recall_stored_units(candidates: list[Candidate], embedder) -> None:
    """Hand the embedder the unit vectors stored with each passage at ingestion: reranking,
    refinement, the extractive provider and the judge then find them instead of encoding them."""
    for c in candidates:
        if c.unit_vectors:
            reads, vectors = unit_reads(c.text, c.table_header), unpack_vectors(c.unit_vectors)
            if len(reads) == len(vectors):  # stored under the same reading of the passage
                embedder.remember(reads, vectors)


def claim_judge(tools: Tools, target: float = DEFAULT_TARGET_PRECISION):
    """Who judges claims: the cascade when a provider can chat (the local judge first, the LLM for
    what it is unsure of at the target precision), else the local judge."""
    return LLMJudge(tools.router, tools.local_judge, target=target) if tools.router.can_chat else tools.local_judge


def _correct(question: str, retrieved: Retrieved, params: AnswerParams, tools: Tools, clock: StageClock):
    """Corrective RAG: classify retrieval, keep what bears on the question, ask the web when
    retrieval was not Correct and the workspace allows it. Returns the pool and its trace."""
    with clock.stage("correct") as note:
        thresholds, reranked = params.corrective, retrieved.reranked
        verdict = classify([s.score for s in reranked], thresholds)
        kept = keep_for(verdict, reranked, thresholds)
        trace = {"applied": True, "verdict": verdict, "params": asdict(thresholds), "kept": [s.candidate.chunk_id for s in kept]}
        web = []
        if verdict != CORRECT:
            web, trace["web"] = _web_search(question, retrieved.query_vector, params, tools, clock)
        pool = sorted([*kept, *web], key=lambda s: (-s.score, s.candidate.chunk_id))[: params.rerank_top_n]
        trace["pool"] = [{"chunk_id": s.candidate.chunk_id, "score": s.score, "web": s.candidate.url is not None} for s in pool]
        note["detail"] = f"retrieval {verdict}, {len(kept)} passages kept" + (f", {len(web)} from the web" if web else "")
    return pool, trace


def _web_search(question: str, query_vector, params: AnswerParams, tools: Tools, clock: StageClock) -> tuple[list, dict]:
    if not params.web_search_enabled:
        return [], {"searched": False, "reason": "web search is off for this workspace"}
    if tools.web is None:
        return [], {"searched": False, "reason": tools.web_missing}
    query, rewrite = _rewrite(question, tools.router)
    try:
        with clock.timed("web_search"):
            results = tools.web.search(query, max_results=params.web_results)
    except WebSearchError as exc:
        return [], {"searched": True, "provider": tools.web.name, "query": query, "rewrite": rewrite, "error": str(exc)}
    scored = tools.reranker.rerank(question, query_vector, as_candidates(results))
    found = [{"url": s.candidate.url, "title": s.candidate.document_title, "score": s.score} for s in scored]
    return scored, {"searched": True, "provider": tools.web.name, "query": query, "rewrite": rewrite, "results": found}


def _rewrite(question: str, router: Router) -> tuple[str, dict]:
    """The web search query: an LLM's rewrite when a provider is configured, else the
    question's content words."""
    query, attempts = router.first_reply(rewrite_messages(question), parse_rewrite)
    used = next((a.provider for a in attempts if a.outcome == "ok"), "local keywords")
    return query or keyword_rewrite(question), {"by": used, "attempts": [asdict(a) for a in attempts]}


def _gate(question, pool, reranked, corrective: dict, params: AnswerParams, tools: Tools, clock: StageClock, *, enabled: bool):
    gate = confidence_gate(
        [s.score for s in pool],
        threshold=params.gate_threshold,
        enabled=enabled,
        answerability=_answerability(question, pool, tools.local_judge, clock) if enabled else None,
        unmatched=_unmatched(question, pool) if enabled and pool else (),
        empty_reason=_empty_reason(reranked, corrective),
    )
    clock.mark("gate", "done" if gate.enabled else "skipped", gate.reason)
    return gate


def _answerability(question: str, pool: list[Scored], judge, clock: StageClock) -> float | None:
    """The best, over the passages an answer may draw on, of the verifier's answerability of each
    passage's sentence the reranker found closest to the question, with its neighbours (a row
    under its heading line): the most relevant passage may be about the subject without answering
    (a table's notes above its rows). Local: asked of every question before any provider is paid."""
    if not pool:
        return None
    with clock.timed("answerability"):
        probability = max(judge.answerability(question, *under_heading(*_best_sentence(s), s.candidate.table_header)) for s in pool)
    return round(probability, 6)


def _unmatched(question: str, pool: list[Scored]) -> tuple[str, ...]:
    best = max(pool, key=lambda s: s.score)  # the passage the mention check reads: the reranker's best
    text, start, end = _best_sentence(best)
    near_start, near_end = passage_window(text, start, end, context=1)
    others = [s.candidate.text for s in pool if s is not best]
    # A question may name a passage by its document ("the Word test table" of word_tables.docx):
    # the documents' names are mentioned where their passages are.
    titles = sorted({s.candidate.document_title for s in pool if s.candidate.document_title})
    return unmatched_terms(question, text, [*others, *titles], near=text[near_start:near_end])


def _best_sentence(best: Scored) -> tuple[str, int, int]:
    """The passage's text and the span of its sentence the reranker found closest to the
    question (all of it when that sentence is unknown)."""
    text = best.candidate.text
    start = text.find(best.best_sentence) if best.best_sentence else -1
    return (text, start, start + len(best.best_sentence)) if start >= 0 else (text, 0, len(text))


def _empty_reason(reranked: list[Scored], corrective: dict) -> str:
    if not reranked:
        return "no passage was retrieved"
    best = max(s.score for s in reranked)
    lower = corrective.get("params", {}).get("lower", 0.0)
    web = "" if corrective.get("web", {}).get("results") else " and the web added nothing"
    return f"retrieval was {corrective.get('verdict', 'incorrect')}: the best relevance {best:.3f} is below the lower threshold {lower:.3f}{web}"


def _refine(pool, query_vector, corrective: dict, params: AnswerParams, tools: Tools, clock: StageClock) -> dict:
    """chunk id → the text the generator sees (verified mode strips passages to their strongest
    sentences); the trace keeps what was kept."""
    if not corrective.get("applied") or not pool:
        return {}
    with clock.timed("refine"):
        refined = refine(pool, query_vector, tools.embedder, params.corrective)
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


def _generate_and_verify(question, gate, query_vector, pool, refined: dict, params: AnswerParams, tools: Tools, clock: StageClock):
    """Generate from the refined texts through the provider router and verify against the
    whole passages, unless the gate refused: a refusal costs no generation."""
    if not gate.passed:
        for name in ("generate", "verify"):
            clock.mark(name, "skipped", "refused by the confidence gate")
        return Answer(text=REFUSAL, claims=(), insufficient=True, provider="gate"), [], []
    sources = [s.candidate for s in pool]
    # The generator sees each passage refined to its strongest units; a row kept without its
    # table's heading line is still read under it.
    seen = [
        replace(c, text=refined[c.chunk_id], table_header=c.table_header or first_table_header(c.text)) if c.chunk_id in refined else c
        for c in sources
    ]
    request = GenerationRequest(question, query_vector, seen, params.answer_max_claims)
    with clock.stage("generate") as note:
        reply, attempts = tools.router.generate(request, clock.text)
        note["detail"] = " → ".join(f"{a.provider} {a.outcome}" for a in attempts)
    judge = claim_judge(tools, params.target_precision)
    with clock.stage("verify") as note:
        verified = verified_claims(question, reply, sources, params=params, tools=tools, judge=judge)
        note["detail"] = (
            f"{sum(v.faithful for v in verified)} of {len(verified)} claims faithful, judged by {judge.name}" + _answers_detail(verified)
        )
    rows = [asdict(a) | {"purpose": "generate"} for a in attempts]
    return reply, rows + [asdict(a) | {"purpose": "judge"} for a in getattr(judge, "attempts", [])], verified


def verified_claims(
    question: str, given: Answer, sources: list[Candidate], *, params: AnswerParams, tools: Tools, judge, gone: frozenset[int] = frozenset()
) -> list[VerifiedClaim]:
    """`given`'s claims located and judged against `sources` at the workspace's locator threshold
    and target precision, then read against the question when the tools have a reader."""
    verified = verify_answer(
        given, sources, locator_threshold=params.locator_threshold, judge=judge, gone=gone, target=params.target_precision
    )
    return verified if tools.answers is None or not question else tools.answers.read(question, verified, sources)


def _answers_detail(verified: list[VerifiedClaim]) -> str:
    best = answering(verified)
    return "" if best is None else f"; the best-answering claim answers the question {best:.0%}"


def answer_trust(reply: Answer, verified: list[VerifiedClaim], pool: list[Scored], weights: TrustWeights) -> Trust:
    retrieval = max((s.score for s in pool), default=None)
    refused = reply.insufficient and not verified
    agreement = 0.0 if refused else source_agreement(verified)
    return trust_score(
        retrieval=retrieval, agreement=agreement, verified=verified, refused=refused, weights=weights, answering=answering(verified)
    )
