"""The plain data that flows between pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    start: int
    end: int


@dataclass(frozen=True)
class ChunkDraft:
    ordinal: int
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Candidate:
    chunk_id: str
    document_id: str
    document_title: str
    ordinal: int
    text: str
    start: int
    end: int
    dense_rank: int | None
    dense_score: float | None
    keyword_rank: int | None
    keyword_score: float | None
    fused_score: float
    cosine: float | None = None  # with the question, from the stored embedding, for every candidate
    url: str | None = None  # set for a web search result, which is no document of the workspace


@dataclass(frozen=True)
class Claim:
    text: str
    source: int  # 1-based index into the sources given to the generator
    quote: str


@dataclass(frozen=True)
class Answer:
    text: str
    claims: tuple[Claim, ...]
    insufficient: bool
    provider: str


@dataclass(frozen=True)
class Location:
    status: str  # "located" | "hallucinated_quote"
    method: str  # "exact" | "fuzzy" | "none"
    score: float
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class VerifiedClaim:
    claim: Claim
    source_title: str
    location: Location
    verdict: str
    faithful: bool
    judge: str = field(default="none")
