"""Claim verification quality of the product's two-stage verifier (BENCHMARKS.md, bench_verify).

Claims go through `verify_answer` exactly as an answer's claims do, each citing its source
document: the quote locator first, then the judge for located quotes. Claims are grouped into
answers over a few documents, so the judge works in batches as it does for a real answer; a quote
missing from its document but present in another of the answer's documents is recorded as
misattributed (still a hallucinated quote). It needs no workspace or database: verification is
plain pipeline code.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.pipeline.judging.selective import calibrations
from apps.pipeline.llm_judge import LLMJudge
from apps.pipeline.providers import ChatProvider, Router
from apps.pipeline.types import Answer, Candidate, Claim, VerifiedClaim
from apps.pipeline.verification import verify_answer
from apps.queries.services import local_judge_get
from apps.workspaces.models import WorkspaceSettings
from apps.workspaces.selectors import provider_secrets, provider_specs_get
from bench.common import data_path, emit, progress, read_jsonl
from bench.verify import GoldClaim, gold_from_json, judge_probabilities, selective_metrics, verify_metrics

LOCATOR_THRESHOLD = 90.0  # the workspace default
SOURCES_PER_ANSWER = 16  # documents cited by one answer's claims: the verifier judges an answer in one batch


class Command(BaseCommand):
    help = "Claims with cited quotes through the two-stage verifier; accuracy and hallucination detection against gold labels."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", type=Path, default=data_path("scifact", "claims_corpus.jsonl.gz"))
        parser.add_argument("--claims", type=Path, default=data_path("scifact", "claims_train.jsonl"))
        parser.add_argument("--judge", choices=("local", "llm"), default="local")
        parser.add_argument("--locator-threshold", type=float, default=LOCATOR_THRESHOLD)
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, corpus: Path, claims: Path, judge: str, locator_threshold: float, json_path: str | None, **options):
        golds = read_claims(claims)
        documents = read_corpus(corpus, {g.source_id for g in golds})
        verifier = grading_judge(judge)
        progress(f"{len(golds)} claims over {len(documents)} documents, judge {verifier.name}")
        started = time.perf_counter()
        predicted = verify_all(golds, documents, verifier, locator_threshold)
        seconds = time.perf_counter() - started
        result = {"n": len(golds), "judge": verifier.name} | verify_metrics(golds, predicted) | {"seconds": round(seconds, 2)}
        # The outcomes are the product's own, at the default target (verify_answer decides them).
        probabilities = judge_probabilities(predicted, calibrations().get(verifier.name))
        result |= selective_metrics(golds, probabilities, [claim.outcome for claim in predicted])
        emit(result, json_path, self.stdout)


def grading_judge(name: str):
    """The judge bench_verify (and calibrate_judges) grade with: the local judge (the weights at
    settings.VERIFIER_PATH), or the LLM judge over it."""
    local = local_judge_get()
    local.judge("warm up", "The model is loaded before the clock starts.", 0, 10)
    if name != "llm":
        return local
    # The server's providers (GROQ_API_KEY, ZHIPUAI_API_KEY) in the default order, as a new workspace has them.
    options = WorkspaceSettings()
    chat = [ChatProvider(spec, timeout_s=settings.LLM_TIMEOUT_S) for spec in provider_specs_get(options=options) if spec.name != "local"]
    router = Router(chat, secrets=provider_secrets(options=options))
    if not router.can_chat:
        raise CommandError("--judge llm needs an LLM provider: set GROQ_API_KEY or ZHIPUAI_API_KEY (or use --judge local).")
    return LLMJudge(router, local)


def verify_all(golds: list[GoldClaim], documents: dict[str, tuple[str, str]], judge, threshold: float) -> list[VerifiedClaim]:
    """Claims in answers of up to SOURCES_PER_ANSWER source documents, each claim citing its own
    document, as the product verifies an answer's claims (the judge sees one batch per answer)."""
    by_source: dict[str, list[int]] = defaultdict(list)
    for index, gold in enumerate(golds):
        by_source[gold.source_id].append(index)
    source_ids = list(by_source)
    predicted: list[VerifiedClaim | None] = [None] * len(golds)
    done = 0
    for first in range(0, len(source_ids), SOURCES_PER_ANSWER):
        batch = source_ids[first : first + SOURCES_PER_ANSWER]
        indexes = [i for number, source_id in enumerate(batch, start=1) for i in by_source[source_id]]
        number_of = {source_id: number for number, source_id in enumerate(batch, start=1)}
        claims = tuple(Claim(golds[i].claim, number_of[golds[i].source_id], golds[i].quote) for i in indexes)
        sources = [_candidate(source_id, *documents[source_id]) for source_id in batch]
        answer = Answer(text="", claims=claims, insufficient=False, provider="bench")
        for i, claim in zip(indexes, verify_answer(answer, sources, locator_threshold=threshold, judge=judge), strict=True):
            predicted[i] = claim
        done += len(indexes)
        progress(f"{done}/{len(golds)} claims verified")
    return predicted


def _candidate(source_id: str, title: str, text: str) -> Candidate:
    return Candidate(
        chunk_id=source_id,
        document_id=source_id,
        document_title=title,
        ordinal=0,
        text=text,
        start=0,
        end=len(text),
        dense_rank=None,
        dense_score=None,
        keyword_rank=None,
        keyword_score=None,
        fused_score=0.0,
    )


def read_claims(path: Path) -> list[GoldClaim]:
    try:
        golds = [gold_from_json(row) for row in read_jsonl(path)]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"{path} is not a claims file (BENCHMARKS.md): {exc}") from exc
    if not golds:
        raise CommandError(f"{path} holds no claims.")
    return golds


def read_corpus(path: Path, wanted: set[str]) -> dict[str, tuple[str, str]]:
    """id → (title, text) for the documents the claims cite."""
    try:
        documents = {
            str(row.get("id", row.get("_id"))): (row.get("title", ""), row["text"])
            for row in read_jsonl(path)
            if str(row.get("id", row.get("_id"))) in wanted
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"{path} is not a corpus file (BENCHMARKS.md): {exc}") from exc
    missing = sorted(wanted - documents.keys())
    if missing:
        raise CommandError(f"{len(missing)} cited source(s) are not in {path}: {', '.join(missing[:5])}")
    return documents
