"""What every judge is: an object with a `name` and `judge(claim, passage, quote_start,
quote_end)` returning a `Judgement`; it may also offer `judge_many` over a list of such calls to
batch its work. Stage 2 of claim verification asks it whether the passage around a located quote
supports the claim."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from apps.pipeline.types import Judgement

VERDICTS = ("supports", "partial", "contradicts", "not_found")

JudgeRequest = tuple[str, str, int, int]  # claim, passage, quote start, quote end (in the passage)


class Judge(Protocol):
    name: str

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement: ...


def judge_all(judge: Judge, requests: Sequence[JudgeRequest]) -> list[Judgement]:
    if not requests:
        return []
    many = getattr(judge, "judge_many", None)
    return list(many(requests)) if many else [judge.judge(*request) for request in requests]
