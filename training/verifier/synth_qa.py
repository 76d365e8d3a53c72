"""SQuAD-2-style answerability pairs made from licence-clean Wikipedia sentences, without a model.

The gate's hard case is a question written against the very paragraph that does not answer it:
one detail changed (a name, a year, a word swapped for its opposite, a negation), so the nearest
sentence overlaps the question almost entirely and still does not answer it. TrecQA, the only
licence-clean answerability set here, has none of those, and the v1 verifier stayed at chance on
them (SQuAD 2 dev AUROC 0.55).

This module writes such pairs from the premises of FEVER (CC BY-SA 3.0, Wikipedia) and ConjNLI
(MIT, Wikipedia). From a sentence it picks an answer span (a year, a count, a name) and turns
the sentence into a wh-question about it — the subject replaced by "What"/"Who", or the span
replaced in place ("... was released in what year?"). Answerable pairs are that question (some
of its other words dropped, so that a verbatim copy is not the cue) against the sentence with a
neighbour either side, as the gate reads it. Unanswerable pairs keep the sentence and change the
question the way SQuAD 2's writers did: another name or number put in, an antonym, a negation, a
content word swapped; or they keep the question and give it another sentence of the same passage.

Every choice comes from a seeded ``random.Random``, so a seed gives the same pairs.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from training.claims import read_jsonl

SOURCES = {
    "fever_nli": "fever_nli/fever_binary_dev.jsonl.gz",
    "fever_symmetric": "fever_symmetric/fever_symmetric_v02.jsonl",
    "conjnli": "conjnli/conjnli.jsonl",
}
# The two SQuAD 2 dev articles the benchmarks are measured on: no sentence about them is used.
EXCLUDED_TOPICS = re.compile(r"\bnorman|\bnormandy|complexity|turing machine", re.I)

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_YEAR = re.compile(r"\b(?:in |by |since |from |until )?(1[0-9]{3}|20[0-4][0-9])\b")
_COUNT = re.compile(r"\b(\d[\d,]*|two|three|four|five|six|seven|eight|nine|ten|twelve|dozens of|hundreds of|thousands of) ([a-z]{3,}s)\b")
_NAME = re.compile(r"\b[A-Z][a-zA-Z'\-]+(?:(?: of| the| de| and)? [A-Z][a-zA-Z'\-]+)*")
_AUX = re.compile(r"\b(is|was|are|were|has|had|have|can|could|will|did|does)\b")
_WORD = re.compile(r"[A-Za-z][a-z]{4,}")
_PERSON_CUE = re.compile(r"\b(born|actor|actress|singer|player|politician|writer|author|director|musician|rapper|he|she|his|her)\b")
STOP = frozenset(
    "about above after again against among another because before being below between during every first "
    "their there these those through under until where which while would other known since".split()
)
ANTONYMS = dict(
    pair
    for a, b in [
        ("first", "last"),
        ("largest", "smallest"),
        ("before", "after"),
        ("north", "south"),
        ("east", "west"),
        ("increase", "decrease"),
        ("increased", "decreased"),
        ("older", "younger"),
        ("oldest", "youngest"),
        ("highest", "lowest"),
        ("more", "less"),
        ("earliest", "latest"),
        ("best", "worst"),
        ("won", "lost"),
        ("male", "female"),
        ("major", "minor"),
        ("early", "late"),
        ("northern", "southern"),
        ("eastern", "western"),
        ("larger", "smaller"),
        ("higher", "lower"),
        ("longest", "shortest"),
        ("modern", "ancient"),
        ("private", "public"),
        ("debut", "final"),
        ("internal", "external"),
        ("maximum", "minimum"),
        ("upper", "lower"),
        ("began", "ended"),
        ("opened", "closed"),
        ("joined", "left"),
        ("born", "died"),
        ("success", "failure"),
        ("successful", "unsuccessful"),
        ("popular", "unpopular"),
        ("positive", "negative"),
        ("domestic", "foreign"),
        ("natural", "artificial"),
        ("simple", "complex"),
        ("strong", "weak"),
    ]
    for pair in ((a, b), (b, a))
)
NEGATIVE_KINDS = ("swap_name", "swap_number", "antonym", "negation", "swap_word", "other_sentence")


@dataclass(frozen=True)
class QAPair:
    context: str  # the sentence with up to one neighbour either side
    question: str
    answerable: int
    kind: str  # "answer" or one of NEGATIVE_KINDS


def passages(root) -> list[list[str]]:
    """Each source premise split into sentences; passages sorted and deduplicated, so the order is fixed."""
    seen: set[str] = set()
    for path in SOURCES.values():
        for row in read_jsonl(root / path):
            seen.add(row["premise"].strip())
    out = []
    for text in sorted(seen):
        if EXCLUDED_TOPICS.search(text):
            continue
        sents = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
        if sents:
            out.append(sents)
    return out


def _window(sents: list[str], i: int) -> str:
    return " ".join(sents[max(0, i - 1) : i + 2])


def _spans(sentence: str) -> list[tuple[int, int, str]]:
    """Candidate answer spans (start, end, wh-phrase), names not at the very start excluded later."""
    spans = []
    for m in _YEAR.finditer(sentence):
        prep = m.group(0)[: m.start(1) - m.start()].strip()
        spans.append((m.start(), m.end(), f"{prep} what year".strip()))
    for m in _COUNT.finditer(sentence):
        spans.append((m.start(), m.end(), f"how many {m.group(2)}"))
    for m in _NAME.finditer(sentence):
        if m.end() - m.start() >= 4 and not _YEAR.fullmatch(m.group(0)):
            spans.append((m.start(), m.end(), "NAME"))
    return spans


def question_for(sentence: str, span: tuple[int, int, str], rng: random.Random) -> str | None:
    start, end, wh = span
    rest = sentence[end:].strip().rstrip(".").strip()
    if wh == "NAME":
        if start == 0:  # the subject: "X was a film ..." -> "What was a film ...?"
            if not _AUX.match(rest):
                return None
            who = "Who" if _PERSON_CUE.search(rest[:80]) else "What"
            body = rest
        else:  # in place: "... produced by X" -> "... produced by whom / what"
            before = sentence[:start].rstrip()
            if not before or before.split()[-1].lower() not in {"by", "of", "in", "from", "to", "at", "for", "with", "as"}:
                return None
            return _trim(f"{before} {'whom' if before.split()[-1] == 'by' and _PERSON_CUE.search(sentence) else 'what'}", rng)
        return _trim(f"{who} {body}", rng, keep_start=True)
    before = sentence[:start].rstrip()
    if len(before.split()) < 3:
        return None
    return _trim(f"{before} {wh}", rng)


def _trim(text: str, rng: random.Random, keep_start: bool = False, cap: int = 22) -> str:
    words = text.split()
    if len(words) > cap:
        words = words[:cap] if keep_start else words[-cap:]
    # Drop a word (not the first, nor next to the wh-phrase) from a third of them: real questions rarely copy their sentence whole.
    for _ in range(rng.choice((0, 0, 1))):
        idx = [i for i, w in enumerate(words[1:-2], 1) if w.lower() not in {"what", "who", "whom", "year", "how", "many"}]
        if len(idx) > 3:
            del words[rng.choice(idx)]
    q = " ".join(words).rstrip(",;:")
    return q[0].upper() + q[1:] + "?"


def _negative(question: str, kind: str, sents: list[str], i: int, pool: list[str], rng: random.Random) -> tuple[str, str] | None:
    """(context, question) that the context does not answer, or None when the kind does not apply."""
    ctx = _window(sents, i)
    if kind == "other_sentence":
        # Another sentence of the passage, the one sharing most words with the question (as
        # the gate finds its nearest sentence), alone: it does not hold the answer span.
        others = [j for j in range(len(sents)) if j != i and len(sents[j]) >= 40]
        if not others:
            return None
        words = set(question.lower().split())
        j = max(others, key=lambda k: (len(words & set(sents[k].lower().split())), -k))
        return sents[j], question
    if kind == "swap_name":
        names = [m for m in _NAME.finditer(question) if m.start() > 0 and len(m.group(0)) >= 4]
        if not names:
            return None
        m = rng.choice(names)
        for _ in range(5):
            found = [n for s in rng.sample(pool, min(3, len(pool))) for n in _NAME.findall(s)]
            found = [n for n in found if len(n) >= 4 and n not in ctx]
            if found:
                return ctx, question[: m.start()] + rng.choice(found) + question[m.end() :]
        return None
    if kind == "swap_number":
        nums = [m for m in re.finditer(r"\b\d{1,4}\b", question)]
        if not nums:
            return None
        m = rng.choice(nums)
        value = int(m.group(0))
        new = str(value + rng.choice((-1, 1)) * rng.randint(1, 30 if value > 1000 else max(2, value)))
        if new in ctx or new.startswith("-"):
            return None
        return ctx, question[: m.start()] + new + question[m.end() :]
    if kind == "antonym":
        hits = [m for m in re.finditer(r"[a-z]+", question) if m.group(0) in ANTONYMS]
        if not hits:
            return None
        m = rng.choice(hits)
        return ctx, question[: m.start()] + ANTONYMS[m.group(0)] + question[m.end() :]
    if kind == "negation":
        m = _AUX.search(question)
        if not m or "not" in question.split():
            return None
        return ctx, question[: m.end()] + " not" + question[m.end() :]
    if kind == "swap_word":
        words = [m for m in _WORD.finditer(question) if m.group(0).lower() not in STOP and m.start() > 0]
        if not words:
            return None
        m = rng.choice(words)
        for _ in range(5):
            cands = [w for w in _WORD.findall(rng.choice(pool)) if w.lower() not in STOP and w[0].islower()]
            if cands:
                other = rng.choice(cands)
                if other.lower() not in ctx.lower():
                    return ctx, question[: m.start()] + other + question[m.end() :]
        return None
    raise ValueError(kind)


def make_pairs(root, total: int, seed: int) -> list[QAPair]:
    return pairs_from(passages(root), total, seed)


def pairs_from(docs: list[list[str]], total: int, seed: int) -> list[QAPair]:
    """``total`` pairs, 40 % answerable, the rest spread over the negative kinds that apply."""
    rng = random.Random(seed)
    pool = [s for sents in docs for s in sents]
    out: list[QAPair] = []
    want_pos = int(total * 0.4)
    n_pos = n_neg = 0
    attempts = 0
    while (n_pos < want_pos or n_neg < total - want_pos) and attempts < total * 50:
        attempts += 1
        sents = rng.choice(docs)
        i = rng.randrange(len(sents))
        sentence = sents[i]
        if not 40 <= len(sentence) <= 320:
            continue
        spans = _spans(sentence)
        if not spans:
            continue
        question = question_for(sentence, rng.choice(spans), rng)
        if not question or len(question.split()) < 4:
            continue
        if n_pos < want_pos:
            out.append(QAPair(_window(sents, i), question, 1, "answer"))
            n_pos += 1
        if n_neg < total - want_pos:
            kind = rng.choice(NEGATIVE_KINDS)
            neg = _negative(question, kind, sents, i, pool, rng)
            if neg:
                out.append(QAPair(neg[0], neg[1], 0, kind))
                n_neg += 1
    return out
