"""Fit the local support judge (apps/pipeline/judge_model.json) on development claims.

    .venv/bin/python scripts/train_judge.py [--data /work/shared/data] [--split-dir var/verify-split] [--curve]

Data: SciFact train claims and HealthVer dev claims, plus claims derived from sentences of the
training documents by edits whose verdict is known: contradicts for a changed number or unit, an
added or removed negation, an antonym, two names swapped or one renamed (STAT3 → STAT5); partial
for a dropped hedge, an overgeneralisation, or the quote's statement joined to one the passage
does not make; not_found for another, distant sentence of the abstract; supports for light
paraphrases (a clause or parenthesis dropped, a few synonyms).

Held out: claims are grouped by source document (and claims shared across documents join the
same group); a group is held out when the SHA-256 of its first key falls in the lowest 30 %.
Nothing of a held-out group is trained on, synthetic claims included. The held-out claims are
written in the BENCHMARKS.md claims format to --split-dir, for bench_verify. Hyperparameters
and the supports threshold are chosen on a validation part of the training groups only.
Everything is seeded; running twice writes the same file.

--with-verifier adds the verifier's p(supports / contradicts / not_found) on the quote's window
as features (same groups, same split, same tuning). --curve records the held-out figures of models fitted on growing shares of the training
groups (measured only, never used to choose).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from apps.pipeline.embedding import get_embedder  # noqa: E402
from apps.pipeline.judging.cues import ANTONYMS  # noqa: E402
from apps.pipeline.judging.feature_judge import MODEL_PATH, SoftmaxModel, decide  # noqa: E402
from apps.pipeline.judging.features import FEATURES, feature_matrix  # noqa: E402
from apps.pipeline.judging.verdicts import VERDICTS  # noqa: E402
from apps.pipeline.text import sentence_spans  # noqa: E402
from apps.pipeline.verification import locate_quote, passage_window  # noqa: E402
from training.claims import HELD_OUT_SHARE, bucket, load_claims  # noqa: E402
from training.claims import Claim as Row  # noqa: E402

SEED = 20240606
VALIDATION_SHARE = 0.2
LOCATOR_THRESHOLD = 90.0
CURVE_SHARES = (0.1, 0.25, 0.5, 1.0)


# ---------------------------------------------------------------- claims derived by known edits

_SECTION = re.compile(r"^(?:(?:[A-Z]{2,}|AND|OF)[,:&/]?\s+)+(?=[A-Z][a-z]|A\s)")
_LEAD_IN = re.compile(
    r"^(?:(?:Here|In conclusion|Overall|Together|Thus|Moreover|In addition|Furthermore|Finally|However|Interestingly),?\s+)?"
    r"(?:we (?:found|find|show|showed|demonstrate|demonstrated|report|observed|provide evidence) that\s+)?",
    re.IGNORECASE,
)
_PARAPHRASES = {
    "increased": "raised",
    "decreased": "lowered",
    "reduced": "lowered",
    "patients": "people",
    "individuals": "people",
    "significantly ": "",
    "markedly ": "",
    "associated with": "linked to",
    "demonstrated": "showed",
    "revealed": "showed",
    "compared with": "relative to",
    "approximately": "about",
    "subjects": "participants",
    "elevated": "raised",
    "in addition, ": "",
    "however, ": "",
    "therefore": "so",
}
_EXTRA_OPPOSITES = {
    "reduced": "increased",
    "reduces": "increases",
    "reduce": "increase",
    "reduction": "increase",
    "inhibits": "promotes",
    "inhibited": "enhanced",
    "inhibition": "activation",
    "enhanced": "reduced",
    "enhances": "reduces",
    "suppressed": "enhanced",
    "impaired": "improved",
    "elevated": "reduced",
    "decline": "rise",
    "declined": "rose",
    "promoted": "inhibited",
    "activated": "inhibited",
    "improved": "impaired",
    "lowered": "raised",
    "raised": "lowered",
    "loss": "gain",
    "deficiency": "excess",
}
_UNIT_SWAPS = {
    "mg": "g",
    "g": "mg",
    "%": "-fold",
    "days": "weeks",
    "weeks": "months",
    "months": "years",
    "years": "months",
    "hours": "days",
}
_UNIT_SWAPS |= {"ml": "l", "kg": "g", "mm": "cm", "cm": "mm", "minutes": "hours", "μg": "mg", "µg": "mg"}
_AUX = re.compile(r"\b(is|are|was|were|did|does|do|can|could|has|have|had|will|would|should)\b(?! not)")
_NEGATED = [
    (r"\b(did|does|do|was|were|is|are|could|can|had|has|have) not\b", r"\1"),
    (r"\bno significant\b", "a significant"),
    (r"\bnot\s+", ""),
    (r"\bwithout\b", "with"),
]
_HEDGED = [
    (r"\b(?:may|might|could) not be\b", "is not"),
    (r"\b(?:may|might|could) be\b", "is"),
    (r"\b(?:may|might|could) (\w+)", lambda m: third_person(m.group(1))),
    (r"\b(?:appears?|seems?) to (\w+)", lambda m: third_person(m.group(1))),
    (r"\b(?:likely|possibly|potentially|probably|presumably|perhaps|partly|partially) ", ""),
]
_SUGGESTS = re.compile(r"^.*?\b(?:suggest|suggests|suggested|suggesting)(?: that)?\s+(?=\w)", re.IGNORECASE)
_SOME = [(r"\bsome\b", "all"), (r"\bmost\b", "all"), (r"\ba subset of\b", "all"), (r"\bseveral\b", "all"), (r"\boften\b", "always")]


def third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text[:1].upper() + text[1:] if text else text


def clean_sentence(sentence: str) -> str:
    return tidy(_LEAD_IN.sub("", _SECTION.sub("", sentence.strip())))


def support_edit(s: str, rng: random.Random) -> str:
    t = re.sub(r"\s*\([^()]*\)", "", clean_sentence(s))
    if rng.random() < 0.4:
        cut = [m.start() for m in re.finditer(r"(?:;|, (?:whereas|while|and|but)) ", t) if len(t[: m.start()].split()) >= 8]
        if cut:
            t = t[: cut[0]] + "."
    if rng.random() < 0.6:
        for old, new in _PARAPHRASES.items():
            t = re.sub(re.escape(old), new, t, count=1, flags=re.IGNORECASE)
    return tidy(t)


def number_edit(s: str, rng: random.Random) -> str | None:
    found = [m for m in re.finditer(r"(?<![\w.-])\d+(?:\.\d+)?(?![\w.]*\d)", s) if not re.match(r"(19|20)\d\d$", m.group())]
    if not found:
        return None
    m = rng.choice(found)
    raw = m.group()
    if "." in raw:
        places = len(raw.split(".")[1])
        new = f"{float(raw) * rng.choice([0.5, 1.5, 2.0]) + 10**-places:.{places}f}"
    else:
        n = int(raw)
        new = str(rng.choice([n * 2 + 1, n + 1 + rng.randint(0, max(1, n // 2)), max(0, n - 1 - rng.randint(0, max(1, n // 3)))]))
    return None if new == raw else s[: m.start()] + new + s[m.end() :]


def unit_edit(s: str, rng: random.Random) -> str | None:
    m = re.search(r"(\d)\s?(mg|g|%|days|weeks|months|years|hours|ml|kg|mm|cm|minutes|μg|µg)(?!\w)", s)
    return s[: m.start(2)] + _UNIT_SWAPS[m.group(2)] + s[m.end(2) :] if m else None


def negation_edit(s: str, rng: random.Random) -> str | None:
    for pattern, repl in _NEGATED:
        if re.search(pattern, s):
            return re.sub(pattern, repl, s, count=1)
    m = _AUX.search(s)
    return s[: m.end()] + " not" + s[m.end() :] if m else None


def antonym_edit(s: str, rng: random.Random) -> str | None:
    for m in re.finditer(r"[A-Za-z]+", s):
        word = m.group().lower()
        rival = _EXTRA_OPPOSITES.get(word) or (sorted(ANTONYMS[word])[0] if word in ANTONYMS and word not in ("all", "most") else None)
        if rival:
            rival = rival.capitalize() if m.group()[0].isupper() else rival
            return s[: m.start()] + rival + s[m.end() :]
    return None


_NAME = re.compile(r"\b[A-Za-z][\w-]*(?:\d|[A-Z][\w-]*[A-Z])[\w-]*\b")


def rename_edit(s: str, rng: random.Random) -> str | None:
    """Another name where the quote has one: a changed digit in a name (STAT3 → STAT5)."""
    names = [m for m in _NAME.finditer(s) if re.search(r"\d", m.group()) and not re.fullmatch(r"[\d-]+", m.group())]
    if not names:
        return None
    m = rng.choice(names)
    digits = list(re.finditer(r"\d+", m.group()))[-1]
    new_number = str(int(digits.group()) + rng.choice([1, 2, 3]))
    renamed = m.group()[: digits.start()] + new_number + m.group()[digits.end() :]
    return None if renamed in s else s[: m.start()] + renamed + s[m.end() :]


def swap_edit(s: str, rng: random.Random) -> str | None:
    names = [m for m in re.finditer(r"\b[A-Za-z][\w-]*[A-Z0-9][\w-]*\b", s) if len(m.group()) > 1]
    distinct = list({m.group(): m for m in names}.values())
    if len(distinct) < 2:
        anchor = next(
            (m for m in re.finditer(r"\b(?:than|increase[sd]?|decrease[sd]?|reduce[sd]?|inhibit(?:s|ed)?|activate[sd]?|induce[sd]?)\b", s)),
            None,
        )
        if anchor is None:
            return None
        left = [m for m in re.finditer(r"\b[a-z]{5,}\b", s[: anchor.start()]) if m.group() not in ("which", "these", "their", "there")]
        right = [m for m in re.finditer(r"\b[a-z]{5,}\b", s) if m.start() > anchor.end() and m.group() not in ("which", "these", "their")]
        if not left or not right or left[-1].group() == right[0].group():
            return None
        distinct = [left[-1], right[0]]
    a, b = distinct[0], distinct[1]
    return s[: a.start()] + b.group() + s[a.end() : b.start()] + a.group() + s[b.end() :]


def hedge_edit(s: str, rng: random.Random) -> str | None:
    if _SUGGESTS.search(s):
        return tidy(_SUGGESTS.sub("", s, count=1))
    for pattern, repl in _HEDGED:
        if re.search(pattern, s):
            return re.sub(pattern, repl, s, count=1)
    return None


def overgeneral_edit(s: str, rng: random.Random) -> str | None:
    for pattern, repl in _SOME:
        if re.search(pattern, s):
            return re.sub(pattern, repl, s, count=1)
    return None


EDITS = {
    # kind: (edit, label, weight)
    "support": (support_edit, "supports", 3.0),
    "number": (number_edit, "contradicts", 1.0),
    "unit": (unit_edit, "contradicts", 0.3),
    "negation": (negation_edit, "contradicts", 1.0),
    "antonym": (antonym_edit, "contradicts", 1.0),
    "swap": (swap_edit, "contradicts", 0.6),
    "rename": (rename_edit, "contradicts", 0.6),
    "hedge": (hedge_edit, "partial", 1.5),
    "overgeneral": (overgeneral_edit, "partial", 0.4),
    "other_sentence": (None, "not_found", 1.0),
    "conjoin": (None, "partial", 0.5),
}


def sentences_of(text: str) -> list[str]:
    return [text[s.start : s.end] for s in sentence_spans(text)]


def source_docs(rows: list[Row]) -> list[Row]:
    """One row per source document (it carries the document's text and group)."""
    return sorted({(r.dataset, r.source_id): r for r in rows}.values(), key=lambda r: (r.dataset, r.source_id))


def derived_rows(docs: list[Row], per_doc: int, rng: random.Random, fabricate: bool) -> list[Row]:
    """Claims made from sentences of the given documents; each keeps its document's group."""
    rows = []
    for doc in docs:
        sentences = sentences_of(doc.source_text)
        usable = [i for i, s in enumerate(sentences) if 8 <= len(s.split()) <= 60]
        for i in rng.sample(usable, min(per_doc, len(usable))):
            row = _derive(doc, sentences, i, rng)
            if row:
                rows.append(row)
        if fabricate and usable and rng.random() < 0.25:
            rows.extend(_fabricated(doc, sentences, rng.choice(usable), rng))
    return rows


def _derive(doc: Row, sentences: list[str], i: int, rng: random.Random) -> Row | None:
    quote, base = sentences[i], clean_sentence(sentences[i])
    options = []
    for kind, (edit, label, weight) in EDITS.items():
        if kind == "other_sentence":
            claim = _other_sentence(sentences, i, rng)
        elif kind == "conjoin":
            claim = _conjoined(base, _other_sentence(sentences, i, rng))
        else:
            claim = edit(base, rng)
        if claim and claim.strip() != base.strip():
            options.append((kind, claim, label, weight))
    if not options:
        return None
    kind, claim, label, _ = rng.choices(options, weights=[o[3] for o in options])[0]
    return Row(f"syn-{kind}-{doc.source_id}-{i}", "synthetic", doc.source_id, claim, quote, label, "verbatim", doc.source_text, doc.group)


def _conjoined(claim: str, other: str | None) -> str | None:
    """The quote's statement joined to one the passage around it does not make: half supported."""
    if not other or len(claim.split()) > 30 or len(other.split()) > 30:
        return None
    return tidy(f"{claim.rstrip('.')}, and {other[:1].lower()}{other[1:]}")


def _other_sentence(sentences: list[str], i: int, rng: random.Random) -> str | None:
    far = [s for j, s in enumerate(sentences) if abs(j - i) >= 2 and 6 <= len(s.split()) <= 50]
    return clean_sentence(rng.choice(far)) if far else None


def _fabricated(doc: Row, sentences: list[str], i: int, rng: random.Random) -> list[Row]:
    """A true claim with an altered quote: never located, never judged."""
    quote = sentences[i]
    for edit in (number_edit, negation_edit, antonym_edit):
        altered = edit(quote, rng)
        if altered and altered != quote:
            claim = support_edit(quote, rng)
            return [
                Row(
                    f"syn-fabricated-{doc.source_id}-{i}",
                    "synthetic",
                    doc.source_id,
                    claim,
                    altered,
                    "supports",
                    "fabricated",
                    doc.source_text,
                    doc.group,
                )
            ]
    return []


# ---------------------------------------------------------------- features through the product's stage 1


class CachedEmbedder:
    """The product embedder with its vectors kept on disk between runs of this script."""

    def __init__(self, path: Path):
        self.path = path
        self.inner = get_embedder()
        self.vectors: dict[str, np.ndarray] = {}
        if path.exists():
            data = np.load(path, allow_pickle=False)
            self.vectors = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))

    def embed(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.inner.embed(missing, batch_size), strict=True))
        return np.stack([self.vectors[t] for t in texts])

    def save(self) -> None:
        texts = list(self.vectors)
        np.savez(self.path, texts=np.array(texts), vectors=np.stack([self.vectors[t] for t in texts]))


def judge_requests(rows: list[Row]) -> tuple[list[Row], list[tuple[str, str, int, int]]]:
    """What the judge is asked for each claim whose quote stage 1 locates (as verify_answer asks it)."""
    kept, requests = [], []
    for r in rows:
        location = locate_quote(r.quote, r.source_text, LOCATOR_THRESHOLD)
        if location.status != "located":
            continue
        start, end = passage_window(r.source_text, location.start, location.end)
        kept.append(r)
        requests.append((r.claim, r.source_text[start:end], location.start - start, location.end - start))
    return kept, requests


# ---------------------------------------------------------------- the model


def fit(x: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float, steps: int = 3000) -> tuple[np.ndarray, ...]:
    """Weighted multinomial logistic regression, L2 on the weights, full-batch Adam."""
    mean = np.average(x, axis=0, weights=weights)
    scale = np.sqrt(np.average((x - mean) ** 2, axis=0, weights=weights)) + 1e-6
    z = (x - mean) / scale
    k = len(VERDICTS)
    onehot = np.eye(k)[y]
    w, b = np.zeros((k, x.shape[1])), np.zeros(k)
    m = [np.zeros_like(w), np.zeros_like(b)]
    v = [np.zeros_like(w), np.zeros_like(b)]
    total = weights.sum()
    for step in range(1, steps + 1):
        logits = z @ w.T + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        error = (p - onehot) * weights[:, None] / total
        grads = [error.T @ z + l2 * w, error.sum(axis=0)]
        for i, (param, grad) in enumerate(zip((w, b), grads, strict=True)):
            m[i] = 0.9 * m[i] + 0.1 * grad
            v[i] = 0.999 * v[i] + 0.001 * grad**2
            param -= 0.05 * (m[i] / (1 - 0.9**step)) / (np.sqrt(v[i] / (1 - 0.999**step)) + 1e-8)
    return mean, scale, w, b


def model_of(params: tuple[np.ndarray, ...], threshold: float, features: tuple[str, ...] = FEATURES) -> SoftmaxModel:
    mean, scale, w, b = params
    return SoftmaxModel(features, VERDICTS, mean, scale, w, b, threshold)


def sample_weights(rows: list[Row], share: dict[str, float]) -> np.ndarray:
    """Each data set weighs its share in all, whatever its size; classes balanced within it."""
    counts = Counter((r.dataset, r.label) for r in rows)
    per_set = Counter(r.dataset for r in rows)
    labels_in = defaultdict(set)
    for r in rows:
        labels_in[r.dataset].add(r.label)
    return np.array([share[r.dataset] * per_set[r.dataset] / (len(labels_in[r.dataset]) * counts[(r.dataset, r.label)]) for r in rows])


def scores(model: SoftmaxModel, x: np.ndarray, readings: list, rows: list[Row]) -> dict:
    """Judge-only figures on located claims, as the local judge decides: faithful = supports."""
    predicted = [verdict for verdict, _ in decide(model, x, readings)]
    gold = [r.label for r in rows]
    unfaithful_gold = np.array([g != "supports" for g in gold])
    unfaithful_pred = np.array([p != "supports" for p in predicted])
    tp = int((unfaithful_gold & unfaithful_pred).sum())
    return {
        "n": len(rows),
        "accuracy": round(float((unfaithful_gold == unfaithful_pred).mean()), 4),
        "hallucination_recall": round(tp / max(1, int(unfaithful_gold.sum())), 4),
        "hallucination_precision": round(tp / max(1, int(unfaithful_pred.sum())), 4),
        "verdict_accuracy": round(float(np.mean([p == g for p, g in zip(predicted, gold, strict=True)])), 4),
    }


def choose_threshold(model: SoftmaxModel, x: np.ndarray, rows: list[Row], weights: np.ndarray) -> float:
    """The supports threshold that maximises weighted accuracy plus a quarter of the recall of
    unfaithful claims: passing a hallucination costs more than a false alarm."""
    gold = np.array([r.label != "supports" for r in rows])
    p = model.probabilities(x)[:, VERDICTS.index("supports")]
    best, best_score = 0.5, -1.0
    for t in np.arange(0.30, 0.81, 0.025):
        predicted = p < t
        recall = (predicted & gold).sum() / max(1, gold.sum())
        accuracy = np.average(predicted == gold, weights=weights)
        score = accuracy + 0.25 * recall
        if score > best_score + 1e-9:
            best, best_score = float(round(t, 3)), score
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--split-dir", type=Path, default=ROOT / "var/verify-split")
    parser.add_argument("--out", type=Path, help=f"default {MODEL_PATH.name}")
    parser.add_argument("--cache", type=Path, default=ROOT / "var/judge-embeddings.npz")
    parser.add_argument("--curve", action="store_true", help="record held-out figures for growing shares of the training groups")
    args = parser.parse_args()
    out = args.out or MODEL_PATH
    torch.set_num_threads(1)  # a shared 2-core machine: one thread is faster than two that contend
    started = time.perf_counter()
    rng = random.Random(SEED)
    args.split_dir.mkdir(parents=True, exist_ok=True)

    rows = load_claims(args.data)
    held_out = [r for r in rows if bucket(r.group, "held-out") < HELD_OUT_SHARE]
    train = [r for r in rows if bucket(r.group, "held-out") >= HELD_OUT_SHARE]
    train += derived_rows(source_docs(train), per_doc=3, rng=rng, fabricate=False)
    held_docs = source_docs([r for r in held_out if r.dataset == "scifact"])
    synthetic_held = derived_rows(held_docs, per_doc=2, rng=random.Random(SEED + 1), fabricate=True)
    write_split(args.split_dir, held_out, synthetic_held, train)
    print(f"train {Counter((r.dataset, r.label) for r in train)}", file=sys.stderr)
    print(f"held out {Counter((r.dataset, r.label, r.quote_status) for r in held_out + synthetic_held)}", file=sys.stderr)

    embedder = CachedEmbedder(args.cache)
    train_rows, train_requests = judge_requests(train)
    x_train, train_readings, _ = feature_matrix(train_requests, embedder)
    y_train = np.array([VERDICTS.index(r.label) for r in train_rows])
    held_rows, held_requests = judge_requests([r for r in held_out + synthetic_held if r.quote_status == "verbatim"])
    x_held, held_readings, _ = feature_matrix(held_requests, embedder)
    features = FEATURES

    share = {"scifact": 1.0, "healthver": 0.6, "synthetic": 1.0}
    l2, threshold, validation = tune(x_train, y_train, train_readings, train_rows, share, features)
    weights = sample_weights(train_rows, share)
    model = model_of(fit(x_train, y_train, weights, l2), threshold, features)
    figures = held_out_figures(model, x_held, held_readings, held_rows)
    extra = {}
    if args.curve:
        extra["learning_curve"] = learning_curve(
            x_train, y_train, weights, train_rows, (l2, threshold, features), (x_held, held_readings, held_rows)
        )
    embedder.save()
    write_model(out, model, l2, train_rows, figures, validation, extra)
    print(json.dumps({"l2": l2, "supports_threshold": threshold, "validation": validation, "held_out": figures} | extra, indent=1))
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)


def held_out_figures(model: SoftmaxModel, x: np.ndarray, readings: list, rows: list[Row]) -> dict:
    return {
        name: scores(model, x[idx], [readings[i] for i in idx], [rows[i] for i in idx])
        for name in ("scifact", "healthver", "synthetic")
        if (idx := [i for i, r in enumerate(rows) if r.dataset == name])
    }


def learning_curve(x: np.ndarray, y: np.ndarray, weights: np.ndarray, rows: list[Row], chosen: tuple, held: tuple) -> list[dict]:
    """Held-out accuracy of models fitted (with the chosen L2 and threshold) on the first share of
    the training groups, by a bucket of their own: measured only, never used to choose."""
    l2, threshold, features = chosen
    curve = []
    for share in CURVE_SHARES:
        keep = np.array([bucket(r.group, "curve") < share for r in rows])
        model = model_of(fit(x[keep], y[keep], weights[keep], l2), threshold, features)
        figures = held_out_figures(model, *held)
        curve.append({"share": share, "claims": int(keep.sum())} | {name: f["accuracy"] for name, f in figures.items()})
        print(f"curve {curve[-1]}", file=sys.stderr)
    return curve


def tune(
    x: np.ndarray, y: np.ndarray, readings: list, rows: list[Row], share: dict[str, float], features: tuple[str, ...] = FEATURES
) -> tuple[float, float, dict]:
    """L2 strength and supports threshold from a validation part of the training groups."""
    inner = np.array([bucket(r.group, "validation") < VALIDATION_SHARE for r in rows])
    weights = sample_weights(rows, share)
    best = None
    for l2 in (0.001, 0.01, 0.03, 0.1):
        fitted = model_of(fit(x[~inner], y[~inner], weights[~inner], l2), 0.5, features)
        val_rows = [r for r, keep in zip(rows, inner, strict=True) if keep]
        val_readings = [r for r, keep in zip(readings, inner, strict=True) if keep]
        threshold = choose_threshold(fitted, x[inner], val_rows, weights[inner])
        fitted = model_of((fitted.mean, fitted.scale, fitted.weights, fitted.bias), threshold, features)
        per_set = {
            name: scores(fitted, x[inner][idx], [val_readings[i] for i in idx], [val_rows[i] for i in idx])
            for name in share
            if (idx := [i for i, r in enumerate(val_rows) if r.dataset == name])
        }
        mean_accuracy = float(np.mean([s["accuracy"] for s in per_set.values()]))
        print(f"l2={l2} threshold={threshold} validation={per_set}", file=sys.stderr)
        if best is None or mean_accuracy > best[0]:
            best = (mean_accuracy, l2, threshold, per_set)
    return best[1], best[2], best[3]


def write_split(directory: Path, held_out: list[Row], synthetic: list[Row], train: list[Row]) -> None:
    for name, rows in (
        ("scifact_heldout.jsonl", [r for r in held_out if r.dataset == "scifact"]),
        ("healthver_heldout.jsonl", [r for r in held_out if r.dataset == "healthver"]),
        ("synthetic_heldout.jsonl", synthetic),
    ):
        (directory / name).write_text("".join(json.dumps(r.as_json()) + "\n" for r in rows))
    (directory / "train_ids.txt").write_text("".join(f"{r.id}\n" for r in train))


def write_model(path: Path, model: SoftmaxModel, l2: float, rows: list[Row], figures: dict, validation: dict, extra: dict) -> None:
    data = {
        "kind": "multinomial logistic regression over standardised features",
        "features": list(model.features),
        "classes": list(model.classes),
        "mean": [round(float(v), 6) for v in model.mean],
        "scale": [round(float(v), 6) for v in model.scale],
        "weights": [[round(float(v), 6) for v in row] for row in model.weights],
        "bias": [round(float(v), 6) for v in model.bias],
        "supports_threshold": model.supports_threshold,
        "l2": l2,
        "seed": SEED,
        "trained_on": {f"{d}/{label}": n for (d, label), n in sorted(Counter((r.dataset, r.label) for r in rows).items())},
        "validation": validation,
        "held_out": figures,
    } | extra
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
