"""Stage 2 through the provider router: an LLM grades each located claim against its passage,
in forced JSON; the local judge grades whatever no provider answers for."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from apps.pipeline.judge import VERDICTS, JudgeRequest, judge_all
from apps.pipeline.prompting import UnusableOutput, strip_fences
from apps.pipeline.types import Judgement

SYSTEM = (
    "You check whether a passage supports a claim. Use only the passage, never outside knowledge. "
    "The quote the claim cites is marked «like this» inside the passage. Verdicts: "
    '"supports" (the passage states the claim, numbers, entities and certainty included), '
    '"partial" (it supports part of the claim, or states it less certainly), '
    '"contradicts" (it states something incompatible with the claim), '
    '"not_found" (it does not say). '
    'Reply with one JSON object and nothing else: {"verdict": string, "rationale": string, "confidence": number}, '
    "the rationale one short sentence, the confidence in [0, 1]."
)


class LLMJudge:
    """Judges through the router's LLM providers; `name` says who graded: "llm:groq", or
    "llm:groq+local" when the local judge had to grade some claims."""

    def __init__(self, router, fallback):
        self.router = router
        self.fallback = fallback
        self.name = "llm"
        self.attempts: list = []

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement:
        return self.judge_many([(claim, passage, quote_start, quote_end)])[0]

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[Judgement]:
        graded, graders = [], set()
        for request in requests:
            value, attempts = self.router.first_reply(judge_messages(*request), parse_judgement)
            self.attempts.extend(attempts)
            if value is None:
                local = judge_all(self.fallback, [request])[0]
                graded.append(replace(local, rationale=f"{local.rationale} (local judge: no LLM provider answered)"))
                graders.add(self.fallback.name)
            else:
                graded.append(value)
                graders.add(f"llm:{next(a.provider for a in attempts if a.outcome == 'ok')}")
        self.name = "+".join(sorted(graders, key=lambda g: (not g.startswith("llm"), g))) or "llm"
        return graded


def judge_messages(claim: str, passage: str, quote_start: int, quote_end: int) -> list[dict]:
    marked = f"{passage[:quote_start]}«{passage[quote_start:quote_end]}»{passage[quote_end:]}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"Passage:\n{marked}\n\nClaim: {claim}"}]


def parse_judgement(reply: str) -> Judgement:
    text = strip_fences(reply)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnusableOutput("the judgement is not JSON") from exc
    verdict = data.get("verdict") if isinstance(data, dict) else None
    if verdict not in VERDICTS:
        raise UnusableOutput(f"the verdict must be one of {', '.join(VERDICTS)}")
    rationale = data.get("rationale")
    rationale = " ".join(rationale.split())[:300] if isinstance(rationale, str) else ""
    confidence = data.get("confidence", 0.9)
    confidence = min(max(float(confidence), 0.0), 1.0) if isinstance(confidence, int | float) and not isinstance(confidence, bool) else 0.9
    return Judgement(verdict, rationale or f"the LLM judged it {verdict}", round(confidence, 4))
