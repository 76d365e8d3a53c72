"""Can a chunk's retrieval vector be pooled from its sentence units' vectors, so that ingestion
embeds once (the units) instead of twice (the units, then each chunk whole)?

Each corpus is cut as ingestion cuts it (chunk_text, unit_reads with passage_header, the
workspace's default chunk size and overlap); the units and the chunks that are not themselves a
unit are embedded in two timed passes with the product's embedder. Documents are ranked as dense
retrieval ranks them, by the cosine of their best chunk, with each way of getting a chunk's vector:
a: its own (today), b: the mean of its units' vectors, c: their mean weighted by each unit's word
pieces, f: none, the chunk scores its best unit. No database: only the vectors differ."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.pipeline.embedding import Embedder, default_model_path, set_torch_threads
from apps.pipeline.text import chunk_text, passage_header, unit_reads
from apps.workspaces.models import WorkspaceSettings
from bench.common import data_path, document_text, emit, progress, read_jsonl, record_id
from bench.management.commands.bench_retrieval import _judged_queries, ndcg_at_k, read_qrels, recall_at_k

DRAWS = 2000  # bootstrap resamples of the queries


def scifact(root: Path):
    records = list(read_jsonl(root / "scifact" / "corpus.jsonl.gz"))
    judged = _judged_queries(root / "scifact" / "queries.jsonl", read_qrels(root / "scifact" / "qrels" / "train.tsv"), None)
    return [record_id(r) for r in records], [document_text(r) for r in records], judged


def healthver(root: Path):
    """Each HealthVer claim that its passage supports or contradicts asks for that passage."""
    records = list(read_jsonl(root / "healthver" / "corpus.jsonl"))
    claims = read_jsonl(root / "healthver" / "claims.jsonl")
    judged = [(" ".join(c["claim"].split()), {c["source_id"]: 1.0}) for c in claims if c["label"] in ("supports", "contradicts")]
    return [record_id(r) for r in records], [document_text(r) for r in records], judged


def fiqa842(root: Path):
    """FiQA-2018's test questions over the pool of their 842 relevant answer posts: long posts,
    several chunks each."""
    rows = list(read_jsonl(root / "train" / "fiqa_rerank" / "fiqa_test_positives.jsonl"))
    ids = {post: f"p{i}" for i, post in enumerate(dict.fromkeys(p for r in rows for p in r["positive"]))}
    judged = [(" ".join(r["query"].split()), {ids[p]: 1.0 for p in r["positive"]}) for r in rows]
    return list(ids.values()), [document_text({"text": post}) for post in ids], judged


CORPORA = {"scifact": scifact, "healthver": healthver, "fiqa842": fiqa842}


class Command(BaseCommand):
    help = "Dense retrieval with chunk vectors pooled from their units' vectors (one embedding pass) against the chunks' own."

    def add_arguments(self, parser):
        parser.add_argument("--corpora", default=",".join(CORPORA), help=f"comma-separated: {', '.join(CORPORA)}")
        parser.add_argument("--data", default=str(data_path()), help="the data folder the corpora are read from")
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--limit", type=int, default=None, help="only the first N records of each corpus (quick runs)")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args, corpora, data, threads, limit, json_path, **options):
        names = [n.strip() for n in corpora.split(",") if n.strip()]
        if not names or any(n not in CORPORA for n in names):
            raise CommandError(f"--corpora takes {', '.join(CORPORA)}; got {corpora!r}.")
        fields = WorkspaceSettings._meta
        size, overlap = fields.get_field("chunk_size").default, fields.get_field("chunk_overlap").default
        loaded = {name: _load(name, Path(data), limit) for name in names}  # a missing file stops the run before the model loads
        set_torch_threads(threads)
        embedder = Embedder(default_model_path(), backend=settings.EMBEDDING_BACKEND, export_dir=Path(settings.VAR_DIR) / "models")
        embedder.embed(["warm up: load, and export where needed"])
        result = {"backend": embedder.backend, "threads": threads, "chunk_size": size, "chunk_overlap": overlap, "corpora": {}}
        for name, (ids, texts, judged) in loaded.items():
            progress(f"{name}: {len(ids)} records, {len(judged)} judged queries")
            result["corpora"][name] = _measure(embedder, ids, texts, judged, size=size, overlap=overlap)
            progress(f"{name}: {json.dumps(result['corpora'][name])}")
        emit(result, json_path, self.stdout)


def _load(name: str, root: Path, limit: int | None):
    """The corpus's first `limit` records, and the queries that have a relevant one among them."""
    try:
        ids, texts, judged = CORPORA[name](root)
    except (OSError, ValueError, KeyError) as exc:
        raise CommandError(f"Cannot read {name} under {root}: {exc!r}") from exc
    ids, texts = ids[:limit], texts[:limit]
    known = set(ids)
    judged = [(q, j) for q, j in judged if known & set(j)]
    if not judged:
        raise CommandError(f"{name}: no query has a relevant record among the {len(ids)} read.")
    return ids, texts, judged


def _measure(embedder: Embedder, ids, texts, judged, *, size: int, overlap: int) -> dict:
    chunks = _cut(texts, size=size, overlap=overlap)
    units = list(dict.fromkeys(u for _, _, reads in chunks for u in reads))
    unit_row = {u: i for i, u in enumerate(units)}
    # The chunk pass proper: a chunk of one unit is already embedded by the unit pass.
    whole = list(dict.fromkeys(text for _, text, _ in chunks if text not in unit_row))
    whole_row = {t: i for i, t in enumerate(whole)}
    progress(f"  embedding {len(units)} units, then {len(whole)} chunks")
    unit_vectors, unit_seconds = _timed(embedder, units)
    whole_vectors, whole_seconds = _timed(embedder, whole)
    asked = embedder.embed([q for q, _ in judged])
    tokens = dict(zip(units, embedder.token_lengths(units), strict=True)) | dict(zip(whole, embedder.token_lengths(whole), strict=True))

    own = np.stack([whole_vectors[whole_row[t]] if t in whole_row else unit_vectors[unit_row[t]] for _, t, _ in chunks])
    groups = [np.array([unit_row[u] for u in reads]) for _, _, reads in chunks]
    chunk_doc = np.array([d for d, _, _ in chunks])
    weights = np.array([tokens[u] for u in units], dtype=np.float32)
    variants = {
        "a_own": (own, chunk_doc),
        "b_mean": (_pool(unit_vectors, groups, None), chunk_doc),
        "c_token_mean": (_pool(unit_vectors, groups, weights), chunk_doc),
        "f_best_unit": (unit_vectors[np.concatenate(groups)], np.repeat(chunk_doc, [len(g) for g in groups])),
    }
    scores = {name: _score(asked, vectors, owner, ids, judged) for name, (vectors, owner) in variants.items()}
    unit_tokens, whole_tokens = _pass_tokens(chunks, tokens)
    longest = embedder.model.max_seq_length
    return {
        "docs": len(ids),
        "queries": len(judged),
        "chunks": len(chunks),
        "units_per_chunk": round(float(np.mean([len(g) for g in groups])), 2),
        "chunks_of_one_unit": sum(1 for g in groups if len(g) == 1),
        "chunks_cut_at_model_limit": sum(1 for t in whole if tokens[t] >= longest),
        "tokens": {
            "unit_pass": unit_tokens,
            "chunk_pass": whole_tokens,
            "chunk_share": round(whole_tokens / (unit_tokens + whole_tokens), 3),
        },
        "seconds": {
            "unit_pass": round(unit_seconds, 1),
            "chunk_pass": round(whole_seconds, 1),
            "chunk_share": round(whole_seconds / (unit_seconds + whole_seconds), 3),
        },
        "variants": {
            name: {
                "ndcg_at_10": round(float(ndcg.mean()), 4),
                "recall_at_100": round(float(recall.mean()), 4),
                "ndcg_at_10_vs_a": _paired(scores["a_own"][0], ndcg),
            }
            for name, (ndcg, recall) in scores.items()
        },
    }


def _cut(texts: list[str], *, size: int, overlap: int) -> list[tuple[int, str, list[str]]]:
    """(document index, chunk text, what each of its units is read as), as ingestion cuts them."""
    return [
        (index, draft.text, unit_reads(draft.text, passage_header(draft.text, draft.start, text)))
        for index, text in enumerate(texts)
        for draft in chunk_text(text, size=size, overlap=overlap)
    ]


def _timed(embedder: Embedder, texts: list[str]) -> tuple[np.ndarray, float]:
    embedder.forget()
    started = time.perf_counter()
    vectors = embedder.embed(texts)
    return vectors, time.perf_counter() - started


def _pass_tokens(chunks, tokens: dict[str, int]) -> tuple[int, int]:
    """Word pieces each pass embeds, a text met twice in one document counted once (ingestion
    embeds each distinct text of a window once)."""
    unit_tokens = whole_tokens = 0
    for _, document in itertools.groupby(chunks, key=lambda chunk: chunk[0]):
        document = list(document)
        reads = {u for _, _, units in document for u in units}
        unit_tokens += sum(tokens[u] for u in reads)
        whole_tokens += sum(tokens[t] for t in {text for _, text, _ in document} - reads)
    return unit_tokens, whole_tokens


def _pool(unit_vectors: np.ndarray, groups: list[np.ndarray], weights: np.ndarray | None) -> np.ndarray:
    """Each chunk's units' vectors summed (weighted where weights are given), back to unit length."""
    pooled = np.stack([(unit_vectors[g] if weights is None else unit_vectors[g] * weights[g, None]).sum(axis=0) for g in groups])
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def _score(asked: np.ndarray, vectors: np.ndarray, owner: np.ndarray, ids: list[str], judged) -> tuple[np.ndarray, np.ndarray]:
    """Per query, nDCG@10 and recall@100 of the documents ranked by their best row's cosine (rows
    of a document are consecutive; `owner` holds each row's document index)."""
    # Identical rows (a sentence met in several documents) score bit for bit alike whatever BLAS's
    # threads, so that their documents' tie breaks by document order on every machine.
    distinct, row = np.unique(vectors, axis=0, return_inverse=True)
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    best = np.full((len(asked), len(ids)), -np.inf, dtype=np.float32)
    best[:, owner[starts]] = np.maximum.reduceat((asked @ distinct.T)[:, row.ravel()], starts, axis=1)
    order = np.argsort(-best, axis=1, kind="stable")[:, :100]
    ndcg, recall = [], []
    for row, (_, judgments) in zip(order, judged, strict=True):
        ranking = [ids[i] for i in row]
        ndcg.append(ndcg_at_k(ranking, judgments))
        recall.append(recall_at_k(ranking, {d for d, score in judgments.items() if score > 0}))
    return np.array(ndcg), np.array(recall)


def _paired(base: np.ndarray, other: np.ndarray) -> dict:
    """The mean per-query difference, other − base, with a paired bootstrap 95 % interval (seeded,
    so that a rerun gives the same interval)."""
    diff = other - base
    means = diff[np.random.default_rng(0).integers(0, len(diff), size=(DRAWS, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": round(float(diff.mean()), 4), "low": round(float(low), 4), "high": round(float(high), 4)}
