"""Answers scored again: one written elsewhere (`assess`: an evaluation set, bench_trust), and one
given earlier, judged again against its sources' current text (`reverify`), each the way
`apps.pipeline.answer.answer` scores its own."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from apps.pipeline.answer import AnswerParams, Tools, answer_trust, claim_judge, retrieve_and_rerank, verified_claims
from apps.pipeline.answering import answering
from apps.pipeline.generation import cite_sentences
from apps.pipeline.trust import Trust, source_agreement, trust_score
from apps.pipeline.types import Answer, Candidate, VerifiedClaim


@dataclass(frozen=True)
class Assessment:
    """The verdicts and trust score of an answer that was written elsewhere."""

    claims: list
    trust: Trust
    sources: list


def assess(question: str, answer_text: str, *, params: AnswerParams, tools: Tools) -> Assessment:
    """Score an answer given from outside (an evaluation set, bench_trust) the way `answer` scores
    its own: retrieve and rerank for the question, cite each sentence of the answer to the
    retrieved sentence closest to it, verify the claims and compute the trust components."""
    pool = retrieve_and_rerank(question, params=params, tools=tools).reranked[: params.rerank_top_n]
    sources = [s.candidate for s in pool]
    claims = tuple(cite_sentences(question, answer_text, sources, tools.embedder))
    given = Answer(text=answer_text, claims=claims, insufficient=not claims, provider="external")
    verified = verified_claims(question, given, sources, params=params, tools=tools, judge=tools.local_judge)
    return Assessment(claims=verified, trust=answer_trust(given, verified, pool, params.trust), sources=sources)


@dataclass(frozen=True)
class Reverification:
    """An earlier answer's claims judged again, its trust scored again, and by which judge."""

    claims: list[VerifiedClaim]
    trust: Trust
    judge: str
    attempts: list[dict]  # the judge's provider calls, as the run's attempts list them
    ms: float


def reverify(
    given: Answer,
    sources: list[Candidate],
    *,
    retrieval: float | None,
    params: AnswerParams,
    tools: Tools,
    gone: frozenset[int] = frozenset(),
    question: str = "",
) -> Reverification:
    """Locate and judge `given`'s claims again against `sources` as they read now, as `answer`
    verifies its own; a claim citing a source in `gone` (its document deleted) cannot be checked
    and says so; with `question`, each claim is read against it again. Retrieval's share of the
    trust stays what it was when the answer was made."""
    started = time.perf_counter()
    judge = claim_judge(tools, params.target_precision)
    verified = verified_claims(question, given, sources, params=params, tools=tools, judge=judge, gone=gone)
    trust = trust_score(
        retrieval=retrieval,
        agreement=source_agreement(verified),
        verified=verified,
        refused=False,
        weights=params.trust,
        answering=answering(verified),
    )
    attempts = [asdict(a) | {"purpose": "judge"} for a in getattr(judge, "attempts", [])]
    return Reverification(verified, trust, judge.name, attempts, round((time.perf_counter() - started) * 1000, 2))
