"""bench_scale's data and baseline (BENCHMARKS.md fixes the command's interface).

The corpus is real SciFact text chunked the product's way. A few thousand of its chunks are
embedded for real; the rest come from sentence-shuffled recombinations of those abstracts, with
vectors derived from the real embeddings: all-MiniLM-L6-v2 mean-pools its token vectors, so the
embedding of a text made of pieces lies close to the length-weighted mean of the pieces'
embeddings, and a little Gaussian noise keeps the derived vectors apart. Embedding 100,000
chunks for real would take over two hours on the two-core machine (~12 chunks/s).

Everything is written through the product's own bulk chunk writer (`document_chunks_write_many`:
chunk rows, the HNSW and GIN indexes, the BM25 statistics and sparse vectors), and the baseline — the
original design's in-process rank_bm25 + faiss retrieval — searches the very same texts and
vectors.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from apps.pipeline.embedding import DIMENSIONS
from apps.pipeline.parsing import Extracted, extract
from apps.pipeline.text import chunk_text, sentence_spans
from apps.pipeline.types import ChunkDraft

SEED = 1729
# Real embeddings for 4 % of the chunks, at least 50 and at most 4,000 (about six minutes).
REAL_SHARE, REAL_MIN, REAL_MAX = 0.04, 50, 4000
# A derived document keeps each sentence of its abstract with this chance and mixes in
# sentences of one of the abstract's nearest neighbours (by real embedding), all shuffled.
KEEP_OWN, KEEP_PARTNER, PARTNERS = 0.8, 0.5, 10
# Per dimension: a derived vector keeps a cosine of about 0.92 with its weighted mix.
NOISE = 0.02
EMBED_BATCH = 256
MAX_TRIES = 1000
VECTOR_METHOD = (
    "real: chunks of SciFact abstracts embedded by the product embedder (all-MiniLM-L6-v2); "
    "derived: chunks of sentence-shuffled recombinations of those abstracts with sentences of a "
    f"nearest-neighbour abstract, each vector the unit-normalised mix of the real embeddings of the "
    f"chunks its sentences come from (weighted by characters) plus N(0, {NOISE}²) noise per "
    "dimension, normalised again"
)

Embed = Callable[[list[str]], np.ndarray]
Report = Callable[[str], None]


@dataclass(frozen=True)
class ScaledDocument:
    name: str
    extracted: Extracted
    drafts: list[ChunkDraft]
    vectors: np.ndarray
    real: bool

    def truncated(self, count: int) -> ScaledDocument:
        return ScaledDocument(self.name, self.extracted, self.drafts[:count], self.vectors[:count], self.real)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.extracted.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Sentence:
    text: str
    vector: np.ndarray


@dataclass
class ScaledCorpus:
    """The documents of each workspace, exactly its share of the chunks."""

    workspaces: list[list[ScaledDocument]]

    @property
    def documents(self) -> list[ScaledDocument]:
        """Every document in write order: the workspaces take turns, as tenants' uploads would."""
        longest = max(len(docs) for docs in self.workspaces)
        return [docs[i] for i in range(longest) for docs in self.workspaces if i < len(docs)]

    def count(self, *, real: bool) -> int:
        return sum(len(d.drafts) for docs in self.workspaces for d in docs if d.real == real)


def real_target(chunks: int) -> int:
    return min(chunks, max(REAL_MIN, min(REAL_MAX, round(chunks * REAL_SHARE))))


def document_text(record: dict) -> str:
    """Title and abstract, as bench_retrieval ingests a BEIR record."""
    title, text = (record.get("title") or "").strip(), (record.get("text") or "").strip()
    return "\n\n".join(part for part in (title, text) if part)


def build_corpus(
    records: list[dict], *, chunks: int, workspaces: int, size: int, overlap: int, embed: Embed, report: Report
) -> ScaledCorpus:
    rng = np.random.default_rng(SEED)
    seeds = _seed_documents(records, rng, real_target(chunks), size, overlap, embed, report)
    derive = _Deriver(seeds, rng, size, overlap)
    corpus = ScaledCorpus([])
    for w in range(workspaces):
        quota = chunks // workspaces + (1 if w < chunks % workspaces else 0)
        corpus.workspaces.append(_fill(quota, seeds[w::workspaces], derive))
        report(f"workspace {w + 1}/{workspaces}: {quota} chunks in {len(corpus.workspaces[w])} documents")
    return corpus


def _fill(quota: int, documents: Iterable[ScaledDocument], more: Callable[[], ScaledDocument]) -> list[ScaledDocument]:
    """The given documents, then new ones, up to exactly `quota` chunks (the last one cut short)."""
    kept, total = [], 0
    documents = iter(documents)
    while total < quota:
        document = next(documents, None) or more()
        document = document.truncated(min(len(document.drafts), quota - total))
        kept.append(document)
        total += len(document.drafts)
    return kept


def _seed_documents(records, rng, target: int, size: int, overlap: int, embed: Embed, report: Report) -> list[ScaledDocument]:
    """Random abstracts, chunked the product's way, until `target` chunks; those are embedded for real."""
    drafted, total = [], 0
    for index in rng.permutation(len(records)):
        if total >= target:
            break
        text = document_text(records[index])
        if not text:
            continue
        extracted = extract(f"scifact-{index}.txt", text.encode("utf-8"))
        drafts = chunk_text(extracted.text, size=size, overlap=overlap)
        drafted.append((f"scifact-{index}.txt", extracted, drafts))
        total += len(drafts)
    vectors = embed_in_batches(embed, [d.text for _, _, drafts in drafted for d in drafts], report)
    seeds, start = [], 0
    for name, extracted, drafts in drafted:
        seeds.append(ScaledDocument(name, extracted, drafts, vectors[start : start + len(drafts)], real=True))
        start += len(drafts)
    return seeds


def embed_in_batches(embed: Embed, texts: list[str], report: Report) -> np.ndarray:
    parts = []
    for start in range(0, len(texts), EMBED_BATCH):
        parts.append(embed(texts[start : start + EMBED_BATCH]))
        report(f"embedded {start + len(parts[-1])}/{len(texts)} real chunks")
    return np.concatenate(parts) if parts else np.zeros((0, DIMENSIONS), dtype=np.float32)


class _Deriver:
    """Makes one derived document per call, never the same text twice."""

    def __init__(self, seeds: list[ScaledDocument], rng: np.random.Generator, size: int, overlap: int):
        self.sentences = [_sentences(seed) for seed in seeds]
        self.partners = _nearest(seeds, PARTNERS)
        self.rng, self.size, self.overlap = rng, size, overlap
        self.seen: set[str] = set()
        self.made = 0

    def __call__(self) -> ScaledDocument:
        for _ in range(MAX_TRIES):
            own = int(self.rng.integers(len(self.sentences)))
            partner = int(self.rng.choice(self.partners[own]))
            picked = self._keep(self.sentences[own], KEEP_OWN) or self.sentences[own][:1]
            picked += self._keep(self.sentences[partner], KEEP_PARTNER)
            picked = [picked[i] for i in self.rng.permutation(len(picked))]
            text = " ".join(s.text for s in picked)
            if text not in self.seen:
                self.seen.add(text)
                self.made += 1
                return self._document(f"derived-{self.made}.txt", text, picked)
        raise ValueError(f"{len(self.sentences)} seed abstracts give no new text after {MAX_TRIES} tries")

    def _keep(self, sentences: list[_Sentence], chance: float) -> list[_Sentence]:
        return [s for s in sentences if self.rng.random() < chance]

    def _document(self, name: str, text: str, picked: list[_Sentence]) -> ScaledDocument:
        extracted = extract(name, text.encode("utf-8"))
        if extracted.text != text:
            raise AssertionError(f"text extraction changed {name}; the derived vectors would not line up")
        drafts = chunk_text(extracted.text, size=self.size, overlap=self.overlap)
        starts = np.cumsum([0] + [len(s.text) + 1 for s in picked[:-1]])
        ends = starts + np.array([len(s.text) for s in picked])
        sentence_vectors = np.stack([s.vector for s in picked])
        vectors = np.stack([self._mix(d, starts, ends, sentence_vectors) for d in drafts])
        return ScaledDocument(name, extracted, drafts, vectors, real=False)

    def _mix(self, draft: ChunkDraft, starts: np.ndarray, ends: np.ndarray, sentence_vectors: np.ndarray) -> np.ndarray:
        weights = np.clip(np.minimum(ends, draft.end) - np.maximum(starts, draft.start), 0, None).astype(np.float32)
        mixed = _unit(weights @ sentence_vectors)
        return _unit(mixed + self.rng.normal(0.0, NOISE, DIMENSIONS).astype(np.float32))


def _sentences(seed: ScaledDocument) -> list[_Sentence]:
    """The abstract's sentences (the product's splitter), each with the real vector of its chunk."""
    sentences = []
    for span in sentence_spans(seed.extracted.text):
        chunk = next(i for i, d in enumerate(seed.drafts) if d.start <= span.start < d.end) if seed.drafts else None
        text = " ".join(seed.extracted.text[span.start : span.end].split())
        if chunk is not None and text:
            sentences.append(_Sentence(text, seed.vectors[chunk]))
    return sentences


def _nearest(seeds: list[ScaledDocument], count: int) -> list[np.ndarray]:
    """For each seed, its `count` nearest other seeds by mean chunk embedding (itself when alone)."""
    means = np.stack([_unit(seed.vectors.mean(axis=0)) for seed in seeds])
    similarity = means @ means.T
    np.fill_diagonal(similarity, -np.inf)
    count = min(count, len(seeds) - 1)
    if count == 0:
        return [np.array([i]) for i in range(len(seeds))]
    return list(np.argpartition(-similarity, count - 1, axis=1)[:, :count])


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm > 0 else vector.astype(np.float32)


_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class Baseline:
    """The original TrustRAG design's retrieval, in process: one rank_bm25 `BM25Okapi` over every
    chunk of every workspace and one faiss `IndexFlatL2` over every vector. The indexes know no
    workspace: a query scores all chunks, keeps its workspace's hits afterwards, and merges the
    two lists (dense first) without duplicates."""

    def __init__(self, texts: list[str], vectors: np.ndarray, workspace_of: np.ndarray, *, dense_k: int, keyword_k: int):
        import faiss
        from rank_bm25 import BM25Okapi

        self.texts, self.workspace_of = texts, workspace_of
        self.dense_k, self.keyword_k = dense_k, keyword_k
        self.rows_of = {int(w): np.flatnonzero(workspace_of == w) for w in np.unique(workspace_of)}
        self.bm25 = BM25Okapi([tokens(t) for t in texts])
        self.index = faiss.IndexFlatL2(vectors.shape[1])
        self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def search(self, question: str, query_vector, workspace: int) -> list[tuple[int, str]]:
        hits = dict.fromkeys(self._dense(query_vector, workspace) + self._keyword(question, workspace))
        return [(i, self.texts[i]) for i in hits]

    def _keyword(self, question: str, workspace: int) -> list[int]:
        if self.keyword_k <= 0:
            return []
        scores = self.bm25.get_scores(tokens(question))
        rows = self.rows_of[workspace]
        mine = scores[rows]
        top = np.argsort(-mine, kind="stable")[: self.keyword_k]
        return [int(rows[i]) for i in top if mine[i] > 0]

    def _dense(self, query_vector, workspace: int) -> list[int]:
        """The nearest of all vectors, fetched deeper until enough belong to the workspace."""
        if self.dense_k <= 0:
            return []
        query = np.asarray(query_vector, dtype=np.float32).reshape(1, -1)
        total = self.index.ntotal
        depth = min(total, self.dense_k * len(self.rows_of) * 2)
        while True:
            _, found = self.index.search(query, depth)
            mine = [int(i) for i in found[0] if i >= 0 and self.workspace_of[i] == workspace]
            if len(mine) >= self.dense_k or depth >= total:
                return mine[: self.dense_k]
            depth = min(total, depth * 2)
