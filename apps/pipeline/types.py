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
    # The heading line of the table this passage's first rows belong to, when the table starts
    # in an earlier passage (a row is read with its table's heading).
    table_header: str | None = None
    # Its units' vectors as embedded at ingestion (float16, in `unit_reads` order), so reranking
    # and the stages after it embed only the question; None for a web result or an older chunk.
    unit_vectors: bytes | None = field(default=None, compare=False, repr=False)


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


# A claim whose cited document was deleted after the answer was made: there is nothing to look for
# its quote in, so it is neither located nor a hallucination — it cannot be checked. Both its
# quote's status and its verdict (verification), and a reason of the trust score (trust).
SOURCE_DELETED = "source_deleted"


@dataclass(frozen=True)
class Location:
    status: str  # "located" | "hallucinated_quote" | SOURCE_DELETED (re-verified after its document was deleted)
    method: str  # "exact" | "elided" (pieces around "..." in order) | "fuzzy" | "none"
    score: float
    start: int | None = None
    end: int | None = None
    detail: str = ""  # why a close match was still refused, when it was
    # A quote missing from its cited source but present in another retrieved source is
    # misattributed: still a hallucinated quote for the citation, with where it really is.
    found_in: int | None = None  # 1-based index of that other source
    found_start: int | None = None
    found_end: int | None = None

    @property
    def misattributed(self) -> bool:
        return self.found_in is not None


@dataclass(frozen=True)
class Judgement:
    verdict: str  # "supports" | "partial" | "contradicts" | "not_found"
    rationale: str
    score: float  # the judge's confidence in its verdict, in [0, 1]
    judge: str | None = None  # who decided, where a cascade's judges differ claim by claim


@dataclass(frozen=True)
class VerifiedClaim:
    claim: Claim
    source_title: str
    location: Location
    verdict: str
    faithful: bool
    judge: str = field(default="none")
    rationale: str = ""
    judge_score: float | None = None
    # Whether the claim answers the question (apps/pipeline/answering.py): the answer scorer's raw
    # score for its sentence, and the calibrated probability that an answer it leads is right.
    answer_score: float | None = None
    answers: float | None = None
    # verified / flagged / unsure (apps/pipeline/judging/selective.py), and the calibrated
    # p(supports) it was decided from (None where no calibrated local judge decided it).
    outcome: str = "flagged"
    p_supports: float | None = None
