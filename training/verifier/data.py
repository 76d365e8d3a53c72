"""Training mixes, the held-out split of the development claims, and the fixed evaluation samples."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from training import claims
from training.claims import Claim, read_jsonl
from training.claims import is_held_out as split_held_out
from training.verifier import synth_qa

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


def nli_examples(name: str) -> list[Example]:
    rows = read_jsonl(TRAIN / SETS[name][0])
    out = []
    for r in rows:
        target = NOT_SUPPORTED if name in TWO_CLASS and r["label"] != "entailment" else NLI_TARGET[r["label"]]
        if r["premise"].strip() and r["hypothesis"].strip():
            out.append(Example(r["premise"], r["hypothesis"], 0, target, name))
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


def synth_qa_examples(total: int, seed: int) -> list[Example]:
    """SQuAD-2-style answerability pairs made from licence-clean Wikipedia sentences (synth_qa.py)."""
    return [Example(p.context, p.question, 1, (p.answerable,), "synth_qa") for p in synth_qa.make_pairs(TRAIN, total, seed)]


def shipped_mix(
    nli_pairs: int, answer_pairs: int, seed: int, mix: dict[str, float] | None = None, synth_qa_pairs: int = 0
) -> list[Example]:
    rng = random.Random(seed)
    mix = mix or DEFAULT_MIX
    examples: list[Example] = []
    for name, share in sorted(mix.items()):
        pool = nli_examples(name)
        examples += rng.sample(pool, min(len(pool), round(nli_pairs * share)))
    examples += answer_examples(answer_pairs, rng)
    if synth_qa_pairs:
        examples += synth_qa_examples(synth_qa_pairs, seed)
    return examples


# ---------------------------------------------------------------- development claims, held out by document
# The split is training/claims.py, the one scripts/train_judge.py uses too.


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
