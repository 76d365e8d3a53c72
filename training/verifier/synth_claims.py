"""Claim/quote pairs for the product's task, made from licence-clean Wikipedia sentences, without a model.

TrustRAG's judge reads a claim against the quote it cites (with a sentence either side). General
NLI teaches entailment between differently written sentences, but not the product's two hard
cases: a claim that says its quote's fact in other words (a number written another way, a clause
moved, a detail left out, a hedge) is supported, and a claim that copies its quote but for one
fact (a number, a name, a direction, a negation, a qualifier) is not. The feature judge cried
wolf on the first and the NLI-trained verifier let the second through (docs/verifier.md).

From a sentence of the FEVER (CC BY-SA 3.0) and ConjNLI (MIT) premises this module writes:

- **positives** (supports): the sentence restated by one or two of: a number written another way
  ("25%" → "25 percent", "1,648" → "1648", "3" → "three"), a leading phrase moved to the end, a
  parenthesis or a trailing clause left out, a common word for its synonym, a hedge ("about"
  before a number, "reportedly");
- **negatives**, each changing one fact and then, half the time, restated like a positive so that
  copying is not the cue: a number changed, a name of another passage put in, a word turned to
  its opposite, a negation put in or taken out (contradicts); an "only"/"all"/"always" qualifier
  added, a detail another sentence states added, another sentence of the passage as the claim
  (not found). Scope and added details allow contradicts or not_found (the loss sums them).

The premise is the sentence with a neighbour either side, as the product's judge reads a quote.
Sentences about the SQuAD 2 dev articles' topics are left out (synth_qa.EXCLUDED_TOPICS). Every
choice comes from a seeded ``random.Random``, so a seed gives the same pairs.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from training.verifier.synth_qa import ANTONYMS, passages

SUPPORTS, CONTRADICTS, NOT_FOUND = 0, 1, 2
NOT_SUPPORTED = (CONTRADICTS, NOT_FOUND)

POSITIVE_KINDS = ("number_form", "move_phrase", "drop_part", "synonym", "hedge")
CONTENT = tuple(k for k in POSITIVE_KINDS if k != "hedge")  # restatements that need something in the sentence
KEEPING = tuple(k for k in POSITIVE_KINDS if k != "drop_part")  # restatements that keep every fact
NEGATIVE_KINDS = ("number", "name", "antonym", "negation", "qualifier", "added_detail", "other_sentence")
TARGETS = {
    "number": (CONTRADICTS,),
    "name": NOT_SUPPORTED,
    "antonym": (CONTRADICTS,),
    "negation": (CONTRADICTS,),
    "qualifier": NOT_SUPPORTED,
    "added_detail": NOT_SUPPORTED,
    "other_sentence": (NOT_FOUND,),
}

NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
# Common, domain-free synonyms; both directions are used.
SYNONYMS = dict(
    pair
    for a, b in [
        ("began", "started"),
        ("film", "movie"),
        ("purchased", "bought"),
        ("died", "passed away"),
        ("large", "big"),
        ("small", "little"),
        ("received", "got"),
        ("created", "made"),
        ("located", "situated"),
        ("famous", "well-known"),
        ("approximately", "roughly"),
        ("however", "but"),
        ("also", "as well"),
        ("several", "a number of"),
        ("whole", "entire"),
        ("help", "assist"),
        ("using", "with"),
        ("show", "indicate"),
        ("shows", "indicates"),
        ("showed", "indicated"),
        ("people", "persons"),
        ("children", "kids"),
        ("award", "prize"),
        ("town", "settlement"),
        ("job", "position"),
    ]
    for pair in ((a, b), (b, a))
)
HEDGES = ("reportedly", "according to the text,", "it is stated that")
# Sentence-initial words a hedge put in front lower-cases (a name keeps its capital).
_COMMON_START = frozenset(
    "the a an it its this these those there in on at during after before since by as he she they we his her their "
    "however although while when following from for with one some many most each".split()
)

_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(%| percent| per cent)?(?![\w,.]\d)")
_NAME = re.compile(r"\b[A-Z][a-z'\-]+(?: [A-Z][a-z'\-]+)*")
_AUX = re.compile(r"\b(is|was|are|were|has|had|have|can|could|will|did|does)\b")
_LEAD = re.compile(r"^((?:In|On|During|After|Before|Since|By|At) [^,]{3,40}), (\w.*?)([.!?]?)$")
_PAREN = re.compile(r" \([^()]{1,80}\)")
_TRAIL = re.compile(r", (?:which|who|where|while|and) [^,]{5,}?([.!?]?)$")
_QUALIFIABLE = re.compile(r"\b(is|was|are|were|has|had|have)\b ")


@dataclass(frozen=True)
class ClaimPair:
    quote: str  # the sentence with up to one neighbour either side, as the judge reads a quote
    claim: str
    target: tuple[int, ...]  # allowed support classes
    kind: str  # a positive kind joined by "+", or a negative kind


def _sub(text: str, m: re.Match, new: str) -> str:
    return text[: m.start()] + new + text[m.end() :]


def number_form(s: str, rng: random.Random) -> str | None:
    hits = [m for m in _NUMBER.finditer(s) if not (1000 <= _value(m.group(1)) <= 2100 and "," not in m.group(1))]  # years stay
    if not hits:
        return None
    m = rng.choice(hits)
    digits, unit = m.group(1), m.group(2) or ""
    if unit:
        return _sub(s, m, digits + rng.choice([u for u in ("%", " percent", " per cent") if u != unit]))
    if "," in digits:
        return _sub(s, m, digits.replace(",", ""))
    value = _value(digits)
    if value == int(value) and 0 <= value < len(NUMBER_WORDS):
        return _sub(s, m, NUMBER_WORDS[int(value)])
    if value >= 10000 and value == int(value):
        return _sub(s, m, f"{int(value):,}")
    return None


def _value(digits: str) -> float:
    return float(digits.replace(",", ""))


def move_phrase(s: str, rng: random.Random) -> str | None:
    m = _LEAD.match(s)
    if not m:
        return None
    lead, rest, end = m.groups()
    return rest[0].upper() + rest[1:] + " " + lead[0].lower() + lead[1:] + (end or ".")


def drop_part(s: str, rng: random.Random) -> str | None:
    for pattern in rng.sample([_PAREN, _TRAIL], 2):
        m = pattern.search(s)
        if m:
            end = m.group(1) if pattern is _TRAIL else ""
            out = _sub(s, m, end)
            if len(out.split()) >= 5:
                return out
    return None


def synonym(s: str, rng: random.Random) -> str | None:
    hits = [m for m in re.finditer(r"\b[a-z]+(?: [a-z]+)?\b", s) if m.group(0) in SYNONYMS]
    hits += [m for m in re.finditer(r"\b[a-z]+\b", s) if m.group(0) in SYNONYMS]
    if not hits:
        return None
    m = rng.choice(hits)
    return _sub(s, m, SYNONYMS[m.group(0)])


def hedge(s: str, rng: random.Random) -> str | None:
    hits = [m for m in _NUMBER.finditer(s) if _value(m.group(1)) >= 20 and not (1000 <= _value(m.group(1)) <= 2100)]
    if hits and rng.random() < 0.5:
        m = rng.choice(hits)
        return _sub(s, m, rng.choice(("about ", "around ", "some ")) + m.group(0))
    lead = rng.choice(HEDGES)
    first, _, rest = s.partition(" ")
    return f"{lead[0].upper()}{lead[1:]} {first.lower() if first.lower() in _COMMON_START else first} {rest}"


RESTATE = {"number_form": number_form, "move_phrase": move_phrase, "drop_part": drop_part, "synonym": synonym, "hedge": hedge}


def restate(s: str, rng: random.Random, times: int, kinds: tuple[str, ...] = POSITIVE_KINDS) -> tuple[str, list[str]]:
    """The sentence restated by up to ``times`` of the kinds that apply, and which ones did."""
    done = []
    for kind in rng.sample(kinds, len(kinds)):
        if len(done) == times:
            break
        out = RESTATE[kind](s, rng)
        if out and out != s:
            s, done = out, [*done, kind]
    return s, done


def change_fact(kind: str, s: str, sents: list[str], i: int, pool: list[str], window: str, rng: random.Random) -> str | None:
    """The sentence with one fact changed so that its window no longer supports it, or None."""
    if kind == "number":
        hits = list(_NUMBER.finditer(s))
        if not hits:
            return None
        m = rng.choice(hits)
        value = _value(m.group(1))
        if 1000 <= value <= 2100 and "," not in m.group(1):  # a year moves by years
            size = rng.randint(1, 30)
        else:
            size = rng.randint(1, 9) if value < 100 else max(1, round(value * rng.uniform(0.1, 0.6)))
        step = rng.choice((-1, 1)) * size
        new = value + step
        if new < 0 or f"{new:g}" in window:
            return None
        text = f"{int(new):,}" if "," in m.group(1) else (f"{new:g}" if "." in m.group(1) else str(int(new)))
        return _sub(s, m, text + (m.group(2) or ""))
    if kind == "name":
        names = [
            m for m in _NAME.finditer(s) if m.start() > 0 and len(m.group(0)) >= 4 and m.group(0).split()[0].lower() not in _COMMON_START
        ]
        if not names:
            return None
        m = rng.choice(names)
        found = [
            n.group(0)
            for x in rng.sample(pool, min(5, len(pool)))
            for n in _NAME.finditer(x)
            if n.start() > 0 and len(n.group(0)) >= 4 and n.group(0) not in window and n.group(0).split()[0].lower() not in _COMMON_START
        ]
        return _sub(s, m, rng.choice(found)) if found else None
    if kind == "antonym":
        hits = [m for m in re.finditer(r"\b[a-z]+\b", s) if m.group(0) in ANTONYMS]
        return _sub(s, (m := rng.choice(hits)), ANTONYMS[m.group(0)]) if hits else None
    if kind == "negation":
        m = re.search(r"\b(?:not|never) ", s)
        if m:
            return _sub(s, m, "")
        m = _AUX.search(s)
        return _sub(s, m, m.group(0) + " not") if m else None
    if kind == "qualifier":
        m = _QUALIFIABLE.search(s)
        if not m or re.search(r"\b(only|always|all|every)\b", window, re.I):
            return None
        return _sub(s, m, m.group(0) + rng.choice(("only ", "always ", "never ")).replace("never ", "not always "))
    if kind == "added_detail":
        others = [x for j, x in enumerate(sents) if abs(j - i) > 1] or [x for x in rng.sample(pool, min(3, len(pool))) if x not in window]
        spans = [
            m.group(0)
            for x in others
            for m in re.finditer(r"\b(?:in|by|with|for|at) (?:[A-Z][\w-]+(?: [A-Z][\w-]+)*|1[0-9]{3}|20[0-4][0-9])\b", x)
        ]
        spans = [sp for sp in spans if sp not in window]
        if not spans:
            return None
        core = s.rstrip(".!? ")
        return f"{core} {rng.choice(spans).rstrip(',')}."
    if kind == "other_sentence":
        others = [x for j, x in enumerate(sents) if abs(j - i) > 1 and 8 <= len(x.split()) <= 50]
        return rng.choice(others) if others else None
    raise ValueError(kind)


def _window(sents: list[str], i: int) -> str:
    return " ".join(sents[max(0, i - 1) : i + 2])


def make_pairs(root, total: int, seed: int) -> list[ClaimPair]:
    return pairs_from(passages(root), total, seed)


def pairs_from(docs: list[list[str]], total: int, seed: int) -> list[ClaimPair]:
    """``total`` pairs, half supported, the negatives spread over the kinds that apply."""
    rng = random.Random(seed)
    pool = [s for sents in docs for s in sents]
    out: list[ClaimPair] = []
    want_pos = total // 2
    n_pos = n_neg = attempts = 0
    while (n_pos < want_pos or n_neg < total - want_pos) and attempts < total * 50:
        attempts += 1
        sents = rng.choice(docs)
        i = rng.randrange(len(sents))
        sentence = sents[i]
        if not 8 <= len(sentence.split()) <= 50:
            continue
        window = _window(sents, i)
        if n_pos < want_pos:
            # A hedge applies to any sentence: alone it would be the cue, so it joins a quarter
            # of the other restatements; a tenth of the positives copy their sentence.
            if rng.random() < 0.1:
                claim, kinds = sentence, ["copy"]
            else:
                claim, kinds = restate(sentence, rng, rng.choice((1, 1, 2)), CONTENT)
                if kinds and rng.random() < 0.25:
                    claim = hedge(claim, rng) or claim
                    kinds.append("hedge")
            if kinds:
                out.append(ClaimPair(window, claim, (SUPPORTS,), "+".join(kinds)))
                n_pos += 1
        if n_neg < total - want_pos:
            kind = rng.choice(NEGATIVE_KINDS)
            claim = change_fact(kind, sentence, sents, i, pool, window, rng)
            if claim and claim != sentence:
                if kind != "other_sentence" and rng.random() < 0.5:
                    # never by leaving a part out: the part left out may be the changed fact
                    claim = restate(claim, rng, 1, KEEPING)[0]
                out.append(ClaimPair(window, claim, TARGETS[kind], kind))
                n_neg += 1
    return out
