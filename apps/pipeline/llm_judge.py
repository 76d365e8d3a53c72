"""Stage 2 with a provider: the local judge first, the LLM only where the local judge is unsure.

Every located claim is graded by the local judge; its calibrated p(supports) decides the claim
when it is at or above the verify threshold or at or below the flag threshold for the target
precision (`apps.pipeline.judging.selective`), and a claim that is its quote word for word is
verified without a model. The claims left unsure go to the LLM together, in **one** forced-JSON
request listing them all; a claim the reply leaves out or garbles, or all of them when no provider
answers, keep the local verdict. Each judgement names who decided it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from apps.pipeline.judging.selective import DEFAULT_TARGET_PRECISION, UNSURE, calibrations, claim_outcome
from apps.pipeline.judging.verdicts import VERDICTS, JudgeRequest, judge_all
from apps.pipeline.prompting import UnusableOutput, strip_fences
from apps.pipeline.types import Judgement
from apps.pipeline.verification import is_verbatim

SYSTEM = (
    "You check whether passages support claims. Use only each item's passage, never outside knowledge. "
    "The quote a claim cites is marked «like this» inside its passage. Verdicts: "
    '"supports" (the passage states the claim, numbers, entities and certainty included), '
    '"partial" (it supports part of the claim, or states it less certainly), '
    '"contradicts" (it states something incompatible with the claim), '
    '"not_found" (it does not say). '
    'Reply with one JSON object and nothing else: {"judgements": [{"item": number, "verdict": string, '
    '"rationale": string, "confidence": number}, ...]}, one entry per item, '
    "each rationale one short sentence, each confidence in [0, 1]."
)


class LLMJudge:
    """The cascade; `name` says who graded the answer's claims: "llm:groq", "local", or
    "llm:groq+local" when both did."""

    def __init__(self, router, fallback, *, target: float = DEFAULT_TARGET_PRECISION):
        self.router = router
        self.fallback = fallback
        self.target = target
        self.name = "llm"
        self.attempts: list = []

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement:
        return self.judge_many([(claim, passage, quote_start, quote_end)])[0]

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[Judgement]:
        local = [replace(j, judge=self.fallback.name) for j in judge_all(self.fallback, requests)]
        unsure = [i for i, (request, judged) in enumerate(zip(requests, local, strict=True)) if self._unsure(request, judged)]
        graded = list(local)
        if unsure:
            replies, attempts = self.router.first_reply(judge_messages([requests[i] for i in unsure]), parse_judgements)
            self.attempts.extend(attempts)
            provider = next((a.provider for a in attempts if a.outcome == "ok"), None)
            for item, i in enumerate(unsure, start=1):
                if replies is not None and item in replies:
                    graded[i] = replace(replies[item], judge=f"llm:{provider}")
                else:
                    why = "no LLM provider answered" if replies is None else "the LLM's reply left this claim out"
                    graded[i] = replace(local[i], rationale=f"{local[i].rationale} (local judge: {why})")
        judges = {j.judge for j in graded}
        self.name = "+".join(sorted(judges, key=lambda g: (not g.startswith("llm"), g))) or "llm"
        return graded

    def _unsure(self, request: JudgeRequest, judged: Judgement) -> bool:
        claim, passage, start, end = request
        verbatim = is_verbatim(claim, passage[start:end])
        # An uncalibrated local judge cannot say how sure it is: the LLM reads what it did not verify.
        if not verbatim and self.fallback.name not in calibrations():
            return True
        return claim_outcome(self.fallback.name, judged.verdict, judged.score, verbatim=verbatim, target=self.target)[0] == UNSURE


def judge_messages(requests: Sequence[JudgeRequest]) -> list[dict]:
    items = []
    for number, (claim, passage, quote_start, quote_end) in enumerate(requests, start=1):
        marked = f"{passage[:quote_start]}«{passage[quote_start:quote_end]}»{passage[quote_end:]}"
        items.append(f"Item {number}\nPassage:\n{marked}\n\nClaim: {claim}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n---\n\n".join(items)}]


def parse_judgements(reply: str) -> dict[int, Judgement]:
    """Item number → judgement, for the entries of the reply that are usable (an entry with no
    known verdict is left out, and its claim keeps the local verdict). A bare judgement object is
    read as item 1. Unusable when nothing in it is."""
    text = strip_fences(reply)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnusableOutput("the judgement is not JSON") from exc
    if isinstance(data, dict) and "verdict" in data:
        entries = [data | {"item": 1}]
    else:
        entries = data.get("judgements") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise UnusableOutput('the reply has no "judgements" list')
    judged = {}
    for entry in entries:
        if isinstance(entry, dict) and (item := _item(entry.get("item"))) is not None and entry.get("verdict") in VERDICTS:
            judged.setdefault(item, _judgement(entry))
    if not judged:
        raise UnusableOutput(f"no judgement has a verdict among {', '.join(VERDICTS)}")
    return judged


def _item(value) -> int | None:
    """An entry's item number, given as a number or as digits ("2")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.strip().isdigit() else None


def _judgement(entry: dict) -> Judgement:
    verdict = entry["verdict"]
    rationale = entry.get("rationale")
    rationale = " ".join(rationale.split())[:300] if isinstance(rationale, str) else ""
    confidence = entry.get("confidence", 0.9)
    confidence = min(max(float(confidence), 0.0), 1.0) if isinstance(confidence, int | float) and not isinstance(confidence, bool) else 0.9
    return Judgement(verdict, rationale or f"the LLM judged it {verdict}", round(confidence, 4))
