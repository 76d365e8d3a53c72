"""Web search through Tavily: results become sources with their URL, marked as web."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from apps.pipeline.types import Candidate


class WebSearchError(Exception):
    """The search failed (rate limit, server error, timeout, bad key); the message is safe to show."""


@dataclass(frozen=True)
class WebResult:
    url: str
    title: str
    snippet: str


class TavilySearch:
    name = "tavily"

    def __init__(self, *, api_key: str, base_url: str | None, timeout_s: float):
        from tavily import TavilyClient

        self.client = TavilyClient(api_key=api_key, api_base_url=base_url or None)
        self.timeout_s = timeout_s

    def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        try:
            body = self.client.search(query, max_results=max_results, timeout=self.timeout_s)
        except Exception as exc:  # the client raises its own classes and requests' ones
            raise WebSearchError(f"{exc.__class__.__name__}: {str(exc)[:200]}") from exc
        return [_result(item) for item in body.get("results", []) if item.get("url") and (item.get("content") or "").strip()]


def as_candidates(results: list[WebResult]) -> list[Candidate]:
    return [
        Candidate(
            chunk_id="web:" + hashlib.sha256(r.url.encode()).hexdigest()[:16],
            document_id="web",
            document_title=r.title or r.url,
            ordinal=0,
            text=r.snippet,
            start=0,
            end=len(r.snippet),
            dense_rank=None,
            dense_score=None,
            keyword_rank=None,
            keyword_score=None,
            fused_score=0.0,
            url=r.url,
        )
        for r in results
    ]


def _result(item: dict) -> WebResult:
    return WebResult(url=str(item["url"]), title=str(item.get("title") or ""), snippet=" ".join(str(item["content"]).split()))
