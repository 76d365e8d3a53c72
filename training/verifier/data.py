"""Training mixes, the held-out split of the development claims, and the fixed evaluation samples."""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from training import claims
from training.claims import Claim, read_jsonl
from training.claims import is_held_out as split_held_out
from training.verifier import synth_claims, synth_qa

# The development data beside the repository (../shared/data), wherever the repository is checked out.
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TRAIN = DATA / "train"

# Support targets are sets of allowed classes (index order of apps.pipeline.verifier.SUPPORT_LABELS):
# the loss is -log of the summed probability of the allowed classes. 3-way sets name one class;
# two-class sets (FEVER: SUPPORTS/REFUTES, RTE: entailment/not_entailment) only tell "supported"
# from "not supported", so their negatives allow contradicts OR not_found and never push the
# model towards either. That keeps the supports-vs-not signal (what the product decides on)
# without teaching that a two-class style of pair is never "not found".
SUPPORTS, CONTRADICTS, NOT_FOUND = 0, 1, 2
NLI_TARGET = {"entailment": (SUPPORTS,), "contradiction": (CONTRADICTS,), "neutral": (NOT_FOUND,)}
NOT_SUPPORTED = (CONTRADICTS, NOT_FOUND)
TWO_CLASS = {"fever_nli", "fever_symmetric", "covidfact", "nli4ct", "rte"}

# name -> (file, kind, licence, may ship in commercial weights)
SETS: dict[str, tuple[str, str, str, bool]] = {
    "snli": ("snli/snli_dev_test.jsonl", "nli", "CC BY-SA 4.0", True),
    "cad_snli": ("cad_snli/cad_snli_all_combined.jsonl", "nli", "Apache-2.0", True),
    "fever_nli": ("fever_nli/fever_binary_dev.jsonl.gz", "nli", "CC BY-SA 3.0", True),
    "fever_symmetric": ("fever_symmetric/fever_symmetric_v02.jsonl", "nli", "CC BY-SA 3.0", True),
    "conjnli": ("conjnli/conjnli.jsonl", "nli", "MIT", True),
    "mnli_taxinli": ("mnli_taxinli/taxinli10k.jsonl", "nli", "C-UDA 1.0 + OANC / CC BY-SA 3.0 text", True),
    "trecqa_rerank": ("trecqa_rerank/trecqa.jsonl", "rerank", "TREC QA questions public domain (per repo); AQUAINT sentences", True),
    "synth_qa": ("", "answerability", "made here from FEVER (CC BY-SA 3.0) + ConjNLI (MIT) Wikipedia premises", True),
    "squad_dev8": ("", "answerability", "CC BY-SA 4.0 (SQuAD 2.0)", True),
    "synth_claims": ("", "claims", "made here from FEVER (CC BY-SA 3.0) + ConjNLI (MIT) Wikipedia premises", True),
    "anli": ("anli/anli_dev_r1_r3.jsonl", "nli", "CC BY-NC 4.0 (non-commercial)", False),
    "sick": ("sick/sick_all.jsonl", "nli", "CC BY-NC-SA 3.0 (non-commercial)", False),
    "control": ("control/control_dev_test.jsonl", "nli", "CC BY-NC-SA 4.0 (non-commercial)", False),
    "rte": ("rte/rte_glue_train_dev.jsonl", "nli", "no licence (PASCAL RTE, research use)", False),
    "covidfact": ("covidfact/covidfact.jsonl", "nli", "no licence", False),
    "nli4ct": ("nli4ct/nli4ct_train_dev_test.jsonl", "nli", "no licence", False),
    "dev_claims": ("", "claims", "SciFact CC BY-NC 2.0 + HealthVer research use (non-commercial)", False),
}

# Shipped mix: shares of the NLI budget (FEVER first: claim verification against one evidence
# sentence is closest to quote -> claim; TaxiNLI for genre variety; SNLI/CAD for clean 3-way).
DEFAULT_MIX = {"fever_nli": 0.24, "snli": 0.20, "mnli_taxinli": 0.20, "conjnli": 0.14, "cad_snli": 0.14, "fever_symmetric": 0.08}


@dataclass
class Example:
    premise: str
    hypothesis: str
    task: int  # 0 = support, 1 = answerability
    target: tuple[int, ...]  # allowed support classes, or (0|1,) for answerability
    source: str


# The leave-out protocol's test side: a tenth of each NLI set, chosen by its premise (so a premise
# never stands on both sides), is never trained on by any run and is what "trained without X,
# measured on X" measures. Synthetic claims are measured on pairs made with another seed from
# the same held-back premises.
TEST_SHARE = 10  # percent


def is_test_premise(premise: str) -> bool:
    return int(hashlib.sha256(" ".join(premise.split()).encode()).hexdigest()[:8], 16) % 100 < TEST_SHARE


def nli_examples(name: str, side: str = "train") -> list[Example]:
    rows = read_jsonl(TRAIN / SETS[name][0])
    out = []
    for r in rows:
        target = NOT_SUPPORTED if name in TWO_CLASS and r["label"] != "entailment" else NLI_TARGET[r["label"]]
        if r["premise"].strip() and r["hypothesis"].strip() and is_test_premise(r["premise"]) == (side == "test"):
            out.append(Example(r["premise"], r["hypothesis"], 0, target, name))
    return out


def synth_claim_examples(total: int, seed: int, side: str = "train") -> list[Example]:
    """Claim/quote pairs for the product's task made from licence-clean sentences (synth_claims.py)."""
    docs = [d for d in synth_qa.passages(TRAIN) if is_test_premise(" ".join(d)) == (side == "test")]
    return [Example(p.quote, p.claim, 0, p.target, "synth_claims") for p in synth_claims.pairs_from(docs, total, seed)]


def test_samples(names: list[str], n: int, seed: int) -> dict[str, list[tuple[str, str, int]]]:
    """(premise, hypothesis, supports?) of each set's test side, a fixed sample of ``n``."""
    out = {}
    for name in names:
        rows = synth_claim_examples(n, seed + 1000, "test") if name == "synth_claims" else nli_examples(name, "test")
        rows = random.Random(seed).sample(rows, min(n, len(rows)))
        out[name] = [(e.premise, e.hypothesis, int(e.target == (SUPPORTS,))) for e in rows]
    return out


def answer_examples(total: int, rng: random.Random) -> list[Example]:
    """TrecQA as answerability: query x positive = answers, x hard negative or another query's answer = does not.

    Positives are few (854), so they are used twice; negatives are 3/4 the reranker's hard
    (same-topic) candidates and 1/4 an answer sentence of a different question (off-topic).
    """
    records = list(read_jsonl(TRAIN / SETS["trecqa_rerank"][0]))
    pos = [(p, r["query"]) for r in records for p in r["positive"]]
    hard = [(n, r["query"]) for r in records for n in r["negatives"]]
    easy = []
    for i, r in enumerate(records):
        for _ in range(4):  # an answer sentence of 4 other questions: off-topic, like the gate's off-topic case
            other = records[(i + 1 + rng.randrange(len(records) - 1)) % len(records)]
            easy.append((rng.choice(other["positive"]), r["query"]))
    n_pos = min(2 * len(pos), total // 2)
    n_neg = total - n_pos
    chosen = [(p, q, 1) for p, q in (pos * 2)[:n_pos]]
    chosen += [(p, q, 0) for p, q in rng.sample(hard, min(len(hard), n_neg * 3 // 4))]
    chosen += [(p, q, 0) for p, q in rng.sample(easy, min(len(easy), n_neg - n_neg * 3 // 4))]
    return [Example(p, q, 1, (y,), "trecqa_rerank") for p, q, y in chosen]


def squad_train_articles() -> list[dict]:
    """The SQuAD 2.0 articles of dev8.json that may be trained on: all but those of dev.json,
    which the learning curve and `bench_gate` (its default) measure on, so that figure stays held out."""
    measured = {a["title"] for a in json.loads((DATA / "squad2/dev.json").read_text())["data"]}
    return [a for a in json.loads((DATA / "squad2/dev8.json").read_text())["data"] if a["title"] not in measured]


class _ParagraphReader:
    """A paragraph's sentences, as the gate reads them: one with a neighbour either side."""

    def __init__(self, text: str):
        self.text, self.spans = text, sentences(text)

    def window(self, k: int) -> str:
        return self.text[self.spans[max(0, k - 1)][0] : self.spans[min(len(self.spans) - 1, k + 1)][1]]

    def holding(self, at: int) -> int | None:
        return next((k for k, (a, b) in enumerate(self.spans) if a <= at < b), None)

    def closest(self, question: str, among: list[int] | None = None) -> int:
        asked = set(_WORD.findall(question.lower()))
        among = range(len(self.spans)) if among is None else among
        return max(among, key=lambda k: len(asked & set(_WORD.findall(self.text[self.spans[k][0] : self.spans[k][1]].lower()))))


def squad_examples(total: int, rng: random.Random, articles: list[dict] | None = None) -> list[Example]:
    """Answerability as the gate reads it, from real questions: an answerable question against
    its answer's sentence with a neighbour either side (answers); against another sentence of its
    paragraph, the one sharing most words with it (does not); an unanswerable question (written
    against the paragraph, one detail changed) against its most-overlapping sentence (does not)."""
    pos, near, impossible = [], [], []
    for article in squad_train_articles() if articles is None else articles:
        for para in article["paragraphs"]:
            read = _ParagraphReader(para["context"])
            for qa in para["qas"]:
                q = qa["question"]
                if qa.get("is_impossible"):
                    impossible.append((read.window(read.closest(q)), q, 0))
                    continue
                hit = read.holding(qa["answers"][0]["answer_start"])
                if hit is None:
                    continue
                pos.append((read.window(hit), q, 1))
                others = [k for k in range(len(read.spans)) if abs(k - hit) > 1]
                if others:
                    near.append((read.window(read.closest(q, others)), q, 0))
    pos = pos * 2  # the answerable questions are the scarce side: each is used twice
    n_pos = min(len(pos), total // 2)
    chosen = rng.sample(pos, n_pos)
    chosen += rng.sample(impossible, min(len(impossible), (total - n_pos) * 2 // 3))
    chosen += rng.sample(near, min(len(near), total - len(chosen)))
    return [Example(c, q, 1, (y,), "squad_dev8") for c, q, y in chosen]


def synth_qa_examples(total: int, seed: int) -> list[Example]:
    """SQuAD-2-style answerability pairs made from licence-clean Wikipedia sentences (synth_qa.py)."""
    return [Example(p.context, p.question, 1, (p.answerable,), "synth_qa") for p in synth_qa.make_pairs(TRAIN, total, seed)]


def shipped_mix(
    nli_pairs: int,
    answer_pairs: int,
    seed: int,
    mix: dict[str, float] | None = None,
    synth_qa_pairs: int = 0,
    synth_claim_pairs: int = 0,
    leave_out: frozenset[str] = frozenset(),
    squad_pairs: int = 0,
) -> list[Example]:
    """One epoch's pairs. A set in ``leave_out`` is not trained on, and the NLI budget is shared
    among the others in their proportions, so a leave-out run sees as many pairs as the full one."""
    rng = random.Random(seed)
    mix = {name: share for name, share in (mix or DEFAULT_MIX).items() if name not in leave_out}
    scale = 1 / sum(mix.values())
    examples: list[Example] = []
    for name, share in sorted(mix.items()):
        pool = nli_examples(name)
        examples += rng.sample(pool, min(len(pool), round(nli_pairs * share * scale)))
    if "trecqa_rerank" not in leave_out:
        examples += answer_examples(answer_pairs, rng)
    if synth_qa_pairs and "synth_qa" not in leave_out:
        examples += synth_qa_examples(synth_qa_pairs, seed)
    if synth_claim_pairs and "synth_claims" not in leave_out:
        examples += synth_claim_examples(synth_claim_pairs, seed)
    if squad_pairs and "squad_dev8" not in leave_out:
        examples += squad_examples(squad_pairs, rng)
    return examples


# ---------------------------------------------------------------- development claims, held out by document
# The split is training/claims.py (the retired feature judge was fitted on its other side).


def load_claims(data: Path = DATA) -> list[Claim]:
    return claims.load_claims(data)


def is_held_out(row: Claim) -> bool:
    return split_held_out(row.group)


def dev_claim_examples(rows: list[Claim]) -> list[Example]:
    """Stage-2 (EXPERIMENT, non-commercial) pairs: the training groups' verbatim claims only."""
    target = {"supports": (SUPPORTS,), "contradicts": (CONTRADICTS,), "not_found": (NOT_FOUND,)}
    return [
        Example(r.quote, r.claim, 0, target[r.label], f"dev_{r.dataset}")
        for r in rows
        if not is_held_out(r) and r.quote_status == "verbatim" and r.label in target
    ]


# ---------------------------------------------------------------- fixed evaluation samples


def held_out_claims(rows: list[Claim], dataset: str, n: int, seed: int) -> list[tuple[str, str, int]]:
    """(quote, claim, supports?) for a fixed sample of held-out verbatim claims of one set."""
    pool = [r for r in rows if r.dataset == dataset and is_held_out(r) and r.quote_status == "verbatim"]
    pool.sort(key=lambda r: r.id)
    sample = random.Random(seed).sample(pool, min(n, len(pool))) if n else pool
    return [(r.quote, r.claim, int(r.label == "supports")) for r in sample]


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"[a-z0-9]+")


def sentences(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _SENTENCE.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def squad_pairs(n: int, seed: int, path: Path = DATA / "squad2/dev.json") -> list[tuple[str, str, int]]:
    """(sentence, question, answerable?): the sentence holding the answer, or for an impossible
    question the sentence with the most word overlap (the hardest plausible distractor)."""
    data = json.loads(path.read_text())
    pos, neg = [], []
    for article in data["data"]:
        for para in article["paragraphs"]:
            ctx = para["context"]
            spans = sentences(ctx)
            for qa in para["qas"]:
                q = qa["question"]
                if not qa.get("is_impossible") and qa["answers"]:
                    at = qa["answers"][0]["answer_start"]
                    hit = next((ctx[a:b] for a, b in spans if a <= at < b), None)
                    if hit:
                        pos.append((hit, q, 1))
                elif qa.get("is_impossible"):
                    words = set(_WORD.findall(q.lower()))
                    best = max(spans, key=lambda s: len(words & set(_WORD.findall(ctx[s[0] : s[1]].lower()))))
                    neg.append((ctx[best[0] : best[1]], q, 0))
    rng = random.Random(seed)
    return rng.sample(pos, min(n // 2, len(pos))) + rng.sample(neg, min(n - n // 2, len(neg)))
