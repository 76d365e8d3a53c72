"""Stage 2 of claim verification: does the passage around a located quote support the claim?

A judge is any object with a `name` and `judge(claim, passage, quote_start, quote_end)`
returning a `Judgement`; it may also offer `judge_many` over a list of such calls to batch its
work. The local judge needs no provider: it reads the claim against the passage for the things
that turn a close paraphrase into a wrong claim (numbers and units, negation, opposite
directions and antonyms, swapped or unknown entities, hedges, overgeneralisation), adds the
embedder's similarity, and weighs them with a multinomial logistic regression whose
parameters `scripts/train_judge.py` fits on development claims (`judge_model.json`).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Protocol

import numpy as np
from rapidfuzz import fuzz

from apps.pipeline.embedding import get_embedder
from apps.pipeline.types import Judgement

VERDICTS = ("supports", "partial", "contradicts", "not_found")
MODEL_PATH = Path(__file__).with_name("judge_model.json")

# Claims are short and quotes up to a few hundred word pieces: in batches of 8 the padding
# stays small, and 61 claims with their quotes embed in 2.0 s against 2.9 s in batches of 32.
JUDGE_BATCH_SIZE = 8

JudgeRequest = tuple[str, str, int, int]  # claim, passage, quote start, quote end (in the passage)


class Judge(Protocol):
    name: str

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement: ...


def judge_all(judge: Judge, requests: Sequence[JudgeRequest]) -> list[Judgement]:
    if not requests:
        return []
    many = getattr(judge, "judge_many", None)
    return list(many(requests)) if many else [judge.judge(*request) for request in requests]


# ---------------------------------------------------------------- words and cues

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?(?:-[^\W_]+)*")
_NUMBER = re.compile(r"(?<![^\W\d_])(?<![^\W\d_]-)(?<![\d.,])\d+(?:[.,]\d+)*")
_UNIT = re.compile(r"[\s-]?(%|percent|per cent|[^\W\d_]+(?:/[^\W\d_]+)?)")
STOP = frozenset(
    """a about above after again against also am an and any are as at be been before being between both but by can did do does
    doing during each few for from further had has have having he her here hers him his how i if in into is it its itself just me
    my of off on once or other our ours out over own same she should so such than that the their theirs them then there these they
    this those through to too under until up very was we were what when where which while who whom why will with would you your
    yours thus however therefore whereas whether within among per via using used use study studies patient patients result results
    show shows showed shown found find finding findings data analysis conclusion conclusions background methods objective here
    we report reported observed observe including include includes included""".split()
)
NEGATIONS = frozenset(
    "not no never none nor neither without cannot nothing nobody lack lacks lacked lacking absence absent fail fails failed unable non".split()
)
HEDGES = frozenset(
    """may might could possibly possible potentially potential perhaps likely unlikely probably presumably putative putatively suggest
    suggests suggested suggesting suggestive appear appears appeared seem seems seemed hypothesize hypothesized hypothesise hypothesised
    propose proposed speculate speculated preliminary uncertain unclear apparently plausibly plausible conceivably partly partially
    tend tends""".split()
)
ASSOCIATIVE = frozenset("associated association associations correlated correlation correlates correlate linked link links related".split())
CAUSAL = frozenset("cause causes caused causing leads lead results resulted determines drives drive cures prevents prevent".split())
UNIVERSAL = frozenset("all every always entirely completely only universally invariably exclusively".split())
PARTIAL_QUANTIFIERS = frozenset("some several subset certain partly partially occasionally sometimes".split())
_UP_WORDS = frozenset(
    "more higher high highest greater greatest larger largest longer faster stronger most rose rises up above gain gains".split()
)
_DOWN_WORDS = frozenset(
    "less low fewer smaller smallest shorter slower weaker least fall falls falling fell down below loss losses lost".split()
)
_UP_STEMS = (
    "increas",
    "elevat",
    "rais",
    "rise",
    "rising",
    "upregulat",
    "enhanc",
    "promot",
    "activat",
    "induc",
    "stimulat",
    "boost",
    "improv",
    "accelerat",
    "augment",
    "exacerbat",
    "amplif",
    "strengthen",
    "exceed",
    "overexpress",
    "potentiat",
    "facilitat",
)
_DOWN_STEMS = (
    "decreas",
    "lower",
    "reduc",
    "declin",
    "drop",
    "downregulat",
    "inhibit",
    "suppress",
    "attenuat",
    "diminish",
    "impair",
    "worsen",
    "block",
    "deplet",
    "abolish",
    "abrogat",
    "weaken",
    "lessen",
    "repress",
    "deactivat",
    "inactivat",
    "alleviat",
    "mitigat",
)
_ANTONYM_PAIRS = [
    ("dependent", "independent"),
    ("positive", "negative"),
    ("positively", "negatively"),
    ("present", "absent"),
    ("presence", "absence"),
    ("beneficial", "harmful"),
    ("benefit", "harm"),
    ("effective", "ineffective"),
    ("efficacious", "ineffective"),
    ("safe", "unsafe"),
    ("sufficient", "insufficient"),
    ("necessary", "unnecessary"),
    ("significant", "insignificant"),
    ("significant", "nonsignificant"),
    ("stable", "unstable"),
    ("resistant", "susceptible"),
    ("resistance", "susceptibility"),
    ("agonist", "antagonist"),
    ("benign", "malignant"),
    ("acute", "chronic"),
    ("early", "late"),
    ("earlier", "later"),
    ("before", "after"),
    ("similar", "different"),
    ("same", "different"),
    ("common", "rare"),
    ("male", "female"),
    ("men", "women"),
    ("children", "adults"),
    ("young", "old"),
    ("younger", "older"),
    ("upstream", "downstream"),
    ("inside", "outside"),
    ("excitatory", "inhibitory"),
    ("maternal", "paternal"),
    ("dominant", "recessive"),
    ("homozygous", "heterozygous"),
    ("vivo", "vitro"),
    ("hypertension", "hypotension"),
    ("hyperglycemia", "hypoglycemia"),
    ("overexpression", "underexpression"),
    ("activation", "inactivation"),
    ("gain", "loss"),
    ("protective", "detrimental"),
    ("protects", "harms"),
    ("success", "failure"),
    ("successful", "unsuccessful"),
    ("survival", "death"),
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("increases", "decreases"),
    ("higher", "lower"),
    ("more", "less"),
    ("more", "fewer"),
    ("greater", "smaller"),
    ("larger", "smaller"),
    ("longer", "shorter"),
    ("faster", "slower"),
    ("stronger", "weaker"),
    ("maximum", "minimum"),
    ("upregulates", "downregulates"),
    ("upregulated", "downregulated"),
    ("promotes", "inhibits"),
    ("activates", "inhibits"),
    ("induces", "suppresses"),
    ("improves", "worsens"),
    ("improved", "worsened"),
    ("above", "below"),
    ("majority", "minority"),
    ("always", "never"),
    ("all", "none"),
    ("most", "least"),
    ("highest", "lowest"),
    ("required", "dispensable"),
    ("necessary", "dispensable"),
    ("essential", "dispensable"),
    ("essential", "nonessential"),
    ("narrow", "broad"),
    ("narrower", "broader"),
    ("narrower", "wider"),
    ("narrower", "extensive"),
    ("limited", "extensive"),
    ("sensitive", "insensitive"),
    ("responsive", "unresponsive"),
    ("active", "inactive"),
    ("functional", "nonfunctional"),
    ("detectable", "undetectable"),
    ("increasing", "decreasing"),
    ("rising", "falling"),
    ("accelerates", "delays"),
    ("accelerated", "delayed"),
]
ANTONYMS: dict[str, set[str]] = {}
for _a, _b in _ANTONYM_PAIRS:
    ANTONYMS.setdefault(_a, set()).add(_b)
    ANTONYMS.setdefault(_b, set()).add(_a)
_NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
    if w != "_"
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90", "hundred": "100"}
_NUMBER_WORDS |= {"thousand": "1000", "twice": "2", "twofold": "2", "threefold": "3", "tenfold": "10"}
_UNITS = {
    "%": "percent",
    "percent": "percent",
    "per cent": "percent",
    "mg": "mg",
    "milligram": "mg",
    "milligrams": "mg",
    "g": "g",
    "gram": "g",
    "grams": "g",
    "kg": "kg",
    "kilogram": "kg",
    "kilograms": "kg",
    "µg": "ug",
    "μg": "ug",
    "ug": "ug",
    "mcg": "ug",
    "microgram": "ug",
    "micrograms": "ug",
    "ml": "ml",
    "l": "l",
    "litre": "l",
    "liter": "l",
    "litres": "l",
    "liters": "l",
    "mm": "mm",
    "cm": "cm",
    "m": "m",
    "metre": "m",
    "meter": "m",
    "metres": "m",
    "meters": "m",
    "km": "km",
    "feet": "ft",
    "ft": "ft",
    "mmhg": "mmhg",
    "mmol": "mmol",
    "iu": "iu",
    "day": "day",
    "days": "day",
    "week": "week",
    "weeks": "week",
    "month": "month",
    "months": "month",
    "year": "year",
    "years": "year",
    "yr": "year",
    "hour": "hour",
    "hours": "hour",
    "h": "hour",
    "hr": "hour",
    "minute": "minute",
    "minutes": "minute",
    "min": "minute",
    "second": "second",
    "seconds": "second",
    "fold": "fold",
    "times": "fold",
    "mg/kg": "mg/kg",
    "mg/dl": "mg/dl",
    "mmol/l": "mmol/l",
}


def fold(text: str) -> str:
    """NFKC, lower case, no accents: the form every cue is looked up in."""
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").replace("’", "'")


def words(text: str) -> list[str]:
    """Lower-case words; hyphenated compounds count as their parts ("UCP1-independent")."""
    return [part for token in _WORD.findall(fold(text)) for part in token.split("-") if part]


def stem(word: str) -> str:
    for suffix in (
        "ational",
        "ations",
        "ation",
        "ments",
        "ment",
        "ness",
        "ities",
        "ity",
        "ings",
        "ing",
        "edly",
        "ed",
        "ies",
        "es",
        "ly",
        "s",
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ities") else "")
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def _normal_number(raw: str) -> str:
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", raw):
        raw = raw.replace(",", "")
    raw = raw.replace(",", ".")
    if raw.count(".") > 1:
        return raw
    whole, _, fraction = raw.partition(".")
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def numbers_in(text: str, *, spelled: bool = True) -> list[str]:
    """The quantities a text states, normalised ("32,441" → "32441", "0.50" → "0.5", "two" → "2",
    unless not `spelled`); digits inside names (IL-6, COVID-19, p53) are no quantities."""
    folded = fold(text)
    found = [_normal_number(m.group()) for m in _NUMBER.finditer(folded)]
    return found + [_NUMBER_WORDS[w] for w in words(folded) if w in _NUMBER_WORDS] if spelled else found


def quantities_in(text: str) -> list[tuple[str, str]]:
    """(number, unit) for each number directly followed by a known unit."""
    folded = fold(text)
    pairs = []
    for match in _NUMBER.finditer(folded):
        found = _UNIT.match(folded, match.end())
        unit = found.group(1) if found else ""
        unit = unit if unit in _UNITS else unit.split("/")[0]
        if unit in _UNITS:
            pairs.append((_normal_number(match.group()), _UNITS[unit]))
    return pairs


def direction(word: str) -> int:
    """+1 for a word of increase, -1 for one of decrease, else 0."""
    if word in _UP_WORDS or word.startswith(_UP_STEMS):
        return 1
    if word in _DOWN_WORDS or word.startswith(_DOWN_STEMS):
        return -1
    return 0


def is_negation(word: str) -> bool:
    return word in NEGATIONS or word.endswith("n't")


def polarity_words(text: str) -> Counter:
    """Negation, direction and antonym words: what a near-verbatim quote may not change."""
    return Counter(w for w in words(text) if is_negation(w) or direction(w) or w in ANTONYMS)


def entities_in(claim: str) -> list[str]:
    """Names in the claim: words with inner capitals or digits (IL-6, BRCA1, SARS-CoV-2), Greek
    letters, or capitalised words after the first."""
    return [token for name in names_in(claim) for token in name]


def names_in(text: str) -> list[tuple[str, ...]]:
    """The words of `entities_in`, those next to each other kept together ("Alan Turing"); a
    comma or other mark between two ends a name ("RP, BPP" are two)."""
    names: list[list[str]] = []
    adjacent = False
    text = unicodedata.normalize("NFKC", text)
    previous_end = 0
    for index, match in enumerate(_WORD.finditer(text)):
        token = match.group()
        inner = any(c.isupper() for c in token[1:]) or (any(c.isdigit() for c in token) and any(c.isalpha() for c in token))
        greek = any("\u0370" <= c <= "\u03ff" for c in token)
        if inner or greek or (index > 0 and token[:1].isupper()):
            if adjacent and not text[previous_end : match.start()].strip():
                names[-1].append(token)
            else:
                names.append([token])
            adjacent = True
        else:
            adjacent = False
        previous_end = match.end()
    return [tuple(name) for name in names]


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", fold(text))


# ---------------------------------------------------------------- features

FEATURES = (
    "sim_quote",
    "recall_quote",
    "recall_window",
    "precision_quote",
    "bigram_recall",
    "token_set",
    "restated",
    "claim_numbers",
    "numbers_missing",
    "numbers_all_found",
    "unit_mismatch",
    "neg_mismatch",
    "direction_conflict",
    "direction_agree",
    "antonym_conflict",
    "entities_missing",
    "swap",
    "order_discord",
    "edit_ratio",
    "moved",
    "swap_pair",
    "replaced_opposite",
    "replaced_number",
    "hedge_gap",
    "causal_over_assoc",
    "universal_gap",
    "partial_quantifier_gap",
    "novel_content",
    "length_ratio",
    "sim_x_neg_mismatch",
    "sim_x_direction_conflict",
    "sim_x_numbers_missing",
    "sim_x_hedge_gap",
    "recall_x_sim",
    "quote_plus_extra",
    "cue_any",
    "partial_cue",
    "clean_match",
)
# The verifier's support head on the quote with a sentence either side (apps/pipeline/verifier.py):
# extra features of the combined judge (apps/pipeline/combined_judge.py).
VERIFIER_FEATURES = ("verifier_supports", "verifier_contradicts", "verifier_not_found")
MODEL_FEATURES = (FEATURES, FEATURES + VERIFIER_FEATURES)  # the feature sets a model file may name


@dataclass(frozen=True)
class _Reading:
    """What the lexical features found, kept for the rationale."""

    missing_numbers: tuple[str, ...]
    renumbered: tuple[str, str] | None
    unit_mismatch: tuple[str, ...]
    negation_mismatch: bool
    opposite: tuple[str, str] | None
    missing_entities: tuple[str, ...]
    swapped: bool
    hedge: str | None
    overgeneral: str | None
    causal: bool
    recall: float
    restated: bool


def _stems(tokens: list[str]) -> list[str]:
    return [stem(t) for t in tokens if t not in STOP and t not in NEGATIONS and t not in HEDGES and not t.isdigit()]


def _matches(a: str, b: str) -> bool:
    return a == b or (min(len(a), len(b)) >= 5 and (a.startswith(b) or b.startswith(a)))


def _recall(claim_stems: list[str], passage_stems: set[str]) -> float:
    if not claim_stems:
        return 1.0
    exact = set(passage_stems)
    hits = sum(1 for s in claim_stems if s in exact or any(_matches(s, p) for p in passage_stems))
    return hits / len(claim_stems)


def _bigrams(stems: list[str]) -> set[tuple[str, str]]:
    return set(pairwise(stems))


def _direction_sign(tokens: list[str]) -> int:
    """Net direction of a text, flipped by an odd number of negations."""
    total = sum(direction(t) for t in tokens)
    negations = sum(is_negation(t) for t in tokens)
    sign = (total > 0) - (total < 0)
    return -sign if negations % 2 else sign


def _opposite(claim_tokens: list[str], passage_tokens: list[str]) -> tuple[str, str] | None:
    passage = set(passage_tokens)
    for word in claim_tokens:
        if word in passage:
            continue
        rivals = ANTONYMS.get(word, set()) & passage
        if rivals:
            return word, sorted(rivals)[0]
    claim_dirs = {stem(w): direction(w) for w in claim_tokens if direction(w)}
    passage_dirs = {stem(w): direction(w) for w in passage_tokens if direction(w)}
    for word, sign in claim_dirs.items():
        if word not in passage_dirs:
            rival = next((p for p, s in passage_dirs.items() if s == -sign), None)
            if rival and not any(s == sign for s in passage_dirs.values()):
                return word, rival
    return None


_BE = frozenset("is are was were be been being".split())
_RELATIONS = frozenset(("than", "caus", "bind", "regulat", "target", "precede", "predict", "mediat"))


def _content(token: str) -> bool:
    return token not in STOP and token not in NEGATIONS and token not in HEDGES and not token.isdigit()


def _sides(tokens: list[str], anchor: str) -> tuple[set[str], set[str]]:
    """Content stems before and after the relation word, agent first: a passive
    ("B is activated by A") reads as "A activates B"."""
    stems = [stem(t) for t in tokens]
    at = stems.index(anchor)
    before = {s for t, s in zip(tokens[:at], stems[:at], strict=True) if _content(t)}
    after = {s for t, s in zip(tokens[at + 1 :], stems[at + 1 :], strict=True) if _content(t)}
    passive = at > 0 and tokens[at - 1] in _BE and "by" in tokens[at + 1 : at + 3]
    return (after, before) if passive else (before, after)


def _swap(claim: str, c_tokens: list[str], q_tokens: list[str]) -> float:
    """Names on the other side of the shared relation word than in the quote: "A inhibits B"
    against "B inhibits A". Positive when more names changed sides than kept them."""
    quote_stems = {stem(t) for t in q_tokens}
    names = {stem(w) for e in entities_in(claim) for w in words(e) if _content(w)} & quote_stems
    if len(names) < 2:
        names = {stem(t) for t in c_tokens if _content(t)} & quote_stems
    anchor = _anchor(c_tokens, quote_stems, names)
    if anchor is None:
        return 0.0
    (left_c, right_c), (left_q, right_q) = _sides(c_tokens, anchor), _sides(q_tokens, anchor)
    crossed = len(names & left_c & right_q - left_q) + len(names & right_c & left_q - right_q)
    kept = len(names & left_c & left_q) + len(names & right_c & right_q)
    return (crossed - kept) / max(1, crossed + kept)


def _anchor(c_tokens: list[str], quote_stems: set[str], names: set[str]) -> str | None:
    """The relation word both texts share: the last shared word before the claim's second name
    ("ATM directly phosphorylates Cdk5"), else a shared word of direction or relation."""
    seen_names, candidate = 0, None
    for s in (stem(t) for t in c_tokens if _content(t) and stem(t) in quote_stems):
        if s in names:
            seen_names += 1
            if seen_names == 2 and candidate:
                return candidate
        elif seen_names == 1:
            candidate = s
    for token in c_tokens:
        if (direction(token) or stem(token) in _RELATIONS) and stem(token) in quote_stems:
            return stem(token)
    return None


def _edits(c_tokens: list[str], q_tokens: list[str]) -> tuple[float, float, tuple[str, str] | None, tuple[str, str] | None]:
    """How the claim edits the quote, word by word: similarity of the word sequences, the share of
    claim words that moved to another place, a word replaced by its opposite, a number by another."""
    matcher = SequenceMatcher(None, q_tokens, c_tokens, autojunk=False)
    claim_changed, quote_changed, opposite, renumbered = [], [], None, None
    for op, q0, q1, c0, c1 in matcher.get_opcodes():
        if op == "equal":
            continue
        claim_changed += c_tokens[c0:c1]
        quote_changed += q_tokens[q0:q1]
        if op == "replace" and renumbered is None:
            numbers = [t for t in c_tokens[c0:c1] if t.isdigit()], [t for t in q_tokens[q0:q1] if t.isdigit()]
            renumbered = (numbers[0][0], numbers[1][0]) if all(numbers) else None
        if op == "replace" and opposite is None:
            opposite = next(
                ((c, q) for c in c_tokens[c0:c1] for q in q_tokens[q0:q1] if q in ANTONYMS.get(c, ()) or direction(c) * direction(q) < 0),
                None,
            )
    content = [t for t in c_tokens if t not in STOP]
    moved = {t for t in claim_changed if t not in STOP} & set(quote_changed)
    return matcher.ratio(), len(moved) / max(1, len(content)), opposite, renumbered


def _order_discord(claim_stems: list[str], quote_stems: list[str]) -> float:
    shared = [s for s in dict.fromkeys(claim_stems) if claim_stems.count(s) == 1 and quote_stems.count(s) == 1]
    positions = [quote_stems.index(s) for s in shared]
    pairs = [(i, j) for i in range(len(positions)) for j in range(i + 1, len(positions))]
    if not pairs:
        return 0.0
    return sum(positions[i] > positions[j] for i, j in pairs) / len(pairs)


def _scoped(tokens: list[str], other_stems: set[str], cue, reach: int = 4) -> list[str]:
    """Cue words that bear on what the other text talks about: one of the next few words is shared
    ("not associated with X" counts against a claim about X; "but not in adults" does not)."""
    return [
        token
        for i, token in enumerate(tokens)
        if cue(token) and any(stem(t) in other_stems for t in tokens[i + 1 : i + 1 + reach] if t not in STOP)
    ]


def _scoped_negations(tokens: list[str], other_stems: set[str]) -> int:
    return len(_scoped(tokens, other_stems, is_negation))


def _first(tokens: list[str], lexicon: frozenset[str]) -> str | None:
    return next((t for t in tokens if t in lexicon), None)


def lexical_features(claim: str, passage: str, quote_start: int, quote_end: int) -> tuple[dict[str, float], _Reading]:
    quote = passage[quote_start:quote_end] or passage
    c_tokens, q_tokens, w_tokens = words(claim), words(quote), words(passage)
    c_stems, q_stems, w_stems = _stems(c_tokens), _stems(q_tokens), _stems(w_tokens)
    recall_window = _recall(c_stems, set(w_stems))
    restated = bool(c_tokens) and f" {' '.join(c_tokens)} " in f" {' '.join(w_tokens)} "

    window_numbers = set(numbers_in(passage))
    claim_numbers = numbers_in(claim)
    missing_numbers = tuple(n for n in dict.fromkeys(claim_numbers) if n not in window_numbers)
    window_quantities = quantities_in(passage)
    unit_mismatch = tuple(
        f"{n} {u}"
        for n, u in quantities_in(claim)
        if (n, u) not in window_quantities and any(wn == n and wu != u for wn, wu in window_quantities)
    )

    neg_claim, neg_quote = _scoped_negations(c_tokens, set(q_stems)), _scoped_negations(q_tokens, set(c_stems))
    negation_mismatch = (neg_claim % 2) != (neg_quote % 2)
    c_sign, q_sign = _direction_sign(c_tokens), _direction_sign(q_tokens)
    opposite = _opposite(c_tokens, w_tokens)

    squashed_window = _squash(passage)
    missing_entities = tuple(e for e in entities_in(claim) if _squash(e) not in squashed_window)
    swap = _swap(claim, c_tokens, q_tokens)
    edit_ratio, moved, replaced, renumbered = _edits(c_tokens, q_tokens)
    swap_pair = edit_ratio >= 0.6 and moved > 0  # a near copy of the quote with words put in other places

    hedge_quote = next(iter(_scoped(q_tokens, set(c_stems), HEDGES.__contains__, reach=6)), None)
    hedge_claim = _first(c_tokens, HEDGES)
    hedge_gap = hedge_quote is not None and hedge_claim is None
    causal = bool(set(c_tokens) & CAUSAL) and bool(set(q_tokens) & ASSOCIATIVE) and not set(q_tokens) & CAUSAL
    universal = _first([t for t in c_tokens if t not in set(q_tokens)], UNIVERSAL)
    partial_q = _first([t for t in q_tokens if t not in set(c_tokens)], PARTIAL_QUANTIFIERS)

    recall_quote = _recall(c_stems, set(q_stems))
    cue_any = bool(missing_numbers or unit_mismatch or negation_mismatch or opposite or replaced or renumbered or swap_pair or swap > 0.3)
    cue_any = cue_any or bool(missing_entities) or c_sign * q_sign < 0
    values = {
        "recall_quote": recall_quote,
        "recall_window": recall_window,
        "precision_quote": _recall(q_stems, set(c_stems)),
        "bigram_recall": len(_bigrams(c_stems) & _bigrams(w_stems)) / max(1, len(_bigrams(c_stems))),
        "token_set": fuzz.token_set_ratio(fold(claim), fold(quote)) / 100,
        "restated": float(restated),
        "claim_numbers": float(bool(claim_numbers)),
        "numbers_missing": float(min(2, len(missing_numbers))),
        "numbers_all_found": float(bool(claim_numbers) and not missing_numbers),
        "unit_mismatch": float(bool(unit_mismatch)),
        "neg_mismatch": float(negation_mismatch),
        "direction_conflict": float(c_sign * q_sign < 0),
        "direction_agree": float(c_sign * q_sign > 0),
        "antonym_conflict": float(opposite is not None),
        "entities_missing": float(min(2, len(missing_entities))),
        "swap": swap,
        "order_discord": _order_discord(c_stems, q_stems),
        "edit_ratio": edit_ratio,
        "moved": moved,
        "swap_pair": float(swap_pair),
        "replaced_opposite": float(replaced is not None),
        "replaced_number": float(renumbered is not None),
        "hedge_gap": float(hedge_gap),
        "causal_over_assoc": float(causal),
        "universal_gap": float(universal is not None),
        "partial_quantifier_gap": float(partial_q is not None),
        "novel_content": 1.0 - recall_window,
        "cue_any": float(cue_any),
        "partial_cue": float(hedge_gap or causal or universal is not None),
        "length_ratio": math.log((len(c_tokens) + 1) / (len(q_tokens) + 1)),
    }
    reading = _Reading(
        missing_numbers=missing_numbers,
        renumbered=renumbered,
        unit_mismatch=unit_mismatch,
        negation_mismatch=negation_mismatch,
        opposite=replaced or opposite,
        missing_entities=missing_entities,
        swapped=swap_pair or swap > 0.3,
        hedge=hedge_quote if hedge_gap else None,
        overgeneral=universal or (f"not '{partial_q}'" if partial_q else None),
        causal=causal,
        recall=recall_window,
        restated=restated,
    )
    return values, reading


def feature_matrix(requests: Sequence[JudgeRequest], embedder) -> tuple[np.ndarray, list[_Reading], np.ndarray]:
    """One row of FEATURES per request (claim, passage, quote start, quote end), the lexical
    readings, and the claim-quote similarities. The embedder sees claims and quotes in one batch;
    the sentences around the quote count through the lexical features (embedding them too cost
    twice the time and gained nothing on validation claims)."""
    claims = [r[0] for r in requests]
    quotes = [r[1][r[2] : r[3]] or r[1] for r in requests]
    vectors = embedder.embed(claims + quotes, batch_size=JUDGE_BATCH_SIZE)
    n = len(requests)
    sim_quote = (vectors[:n] * vectors[n:]).sum(axis=1)
    rows, readings = [], []
    for i, request in enumerate(requests):
        values, reading = lexical_features(*request)
        s = float(sim_quote[i])
        values |= {
            "sim_quote": s,
            "sim_x_neg_mismatch": s * values["neg_mismatch"],
            "sim_x_direction_conflict": s * max(values["direction_conflict"], values["antonym_conflict"]),
            "sim_x_numbers_missing": s * values["numbers_missing"],
            "sim_x_hedge_gap": s * values["hedge_gap"],
            "recall_x_sim": s * values["recall_window"],
            "quote_plus_extra": values["precision_quote"] * values["novel_content"],
            "clean_match": s * values["recall_window"] * (1 - values["cue_any"]) * (1 - values["partial_cue"]),
        }
        rows.append([values[name] for name in FEATURES])
        readings.append(reading)
    return np.asarray(rows, dtype=np.float64), readings, sim_quote


# ---------------------------------------------------------------- the model


@dataclass(frozen=True)
class SoftmaxModel:
    """Multinomial logistic regression over standardised features."""

    features: tuple[str, ...]
    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # classes × features
    bias: np.ndarray
    supports_threshold: float  # below this probability, never "supports"

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        logits = ((rows - self.mean) / self.scale) @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)

    def decide(self, probabilities: np.ndarray) -> list[int]:
        supports = self.classes.index("supports")
        decided = []
        for row in probabilities:
            if row[supports] >= self.supports_threshold:
                decided.append(supports)
            else:
                others = row.copy()
                others[supports] = -1.0
                decided.append(int(others.argmax()))
        return decided

    @classmethod
    def load(cls, path: Path) -> SoftmaxModel:
        data = json.loads(path.read_text())
        if tuple(data["features"]) not in MODEL_FEATURES:
            raise ValueError(f"{path} was trained on other features; run scripts/train_judge.py")
        return cls(
            features=tuple(data["features"]),
            classes=tuple(data["classes"]),
            mean=np.asarray(data["mean"]),
            scale=np.asarray(data["scale"]),
            weights=np.asarray(data["weights"]),
            bias=np.asarray(data["bias"]),
            supports_threshold=float(data["supports_threshold"]),
        )


class LocalJudge:
    """The judge that needs no provider: lexical cues and embedding similarity, weighed by the
    trained softmax model."""

    name = "local"

    def __init__(self, model: SoftmaxModel, embedder):
        self.model = model
        self.embedder = embedder

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement:
        return self.judge_many([(claim, passage, quote_start, quote_end)])[0]

    def support_probability(self, claim: str, passage: str, quote_start: int, quote_end: int) -> float:
        """The model's probability of `supports`, unthresholded: the confidence gate reads a
        question as a claim against the passage's sentence nearest to it (its answerability)."""
        rows, _, _ = feature_matrix([(claim, passage, quote_start, quote_end)], self.embedder)
        return float(self.model.probabilities(rows)[0][self.model.classes.index("supports")])

    def answerability(self, question: str, passage: str, start: int, end: int) -> float:
        """The gate's answerability with this judge: the question read as a claim against the
        sentence passage[start:end]."""
        return self.support_probability(question, passage, start, end)

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[Judgement]:
        rows, readings, similarities = feature_matrix(requests, self.embedder)
        return [
            Judgement(verdict, rationale(verdict, reading, float(similarity)), score)
            for (verdict, score), reading, similarity in zip(decide(self.model, rows, readings), readings, similarities, strict=True)
        ]


def decide(model: SoftmaxModel, rows: np.ndarray, readings: list[_Reading]) -> list[tuple[str, float]]:
    """(verdict, confidence) per feature row. A claim the passage states word for word, neither
    negated nor hedged there, is supported without weighing."""
    probabilities = model.probabilities(rows)
    decided = []
    for p, index, reading in zip(probabilities, model.decide(probabilities), readings, strict=True):
        if reading.restated and not reading.negation_mismatch and not reading.hedge:
            decided.append(("supports", 1.0))
        else:
            decided.append((model.classes[index], round(float(p[index]), 4)))
    return decided


def rationale(verdict: str, reading: _Reading, similarity: float) -> str:
    cues = _cues(reading)
    if verdict == "supports" and reading.restated:
        return "the passage states the claim word for word"
    if verdict == "supports":
        return (
            f"the passage says what the claim says (similarity {similarity:.2f}, {reading.recall:.0%} of its content words in the passage)"
        )
    if verdict == "partial" and reading.hedge:
        return f"the passage hedges ('{reading.hedge}') where the claim is certain"
    if verdict == "partial" and reading.overgeneral:
        return f"the claim generalises beyond the passage ({reading.overgeneral})"
    if verdict == "partial" and reading.causal:
        return "the passage reports an association where the claim asserts a cause"
    if verdict == "partial":
        return f"the passage backs only part of the claim ({reading.recall:.0%} of its content words in the passage)"
    if verdict == "contradicts" and cues:
        return "; ".join(cues)
    if verdict == "contradicts":
        return f"the passage states otherwise (similarity {similarity:.2f})"
    return f"the passage does not address the claim (similarity {similarity:.2f}, {reading.recall:.0%} of its content words in the passage)"


def _cues(reading: _Reading) -> list[str]:
    cues = []
    if reading.missing_numbers:
        cues.append(f"the passage does not state {', '.join(reading.missing_numbers)}")
    if reading.renumbered and not reading.missing_numbers:
        cues.append(f"the claim says {reading.renumbered[0]} where the passage says {reading.renumbered[1]}")
    if reading.unit_mismatch:
        cues.append(f"the passage gives {', '.join(reading.unit_mismatch)} in other units")
    if reading.negation_mismatch:
        cues.append("one of claim and quote is negated, the other not")
    if reading.opposite:
        cues.append(f"the claim says '{reading.opposite[0]}' where the passage says '{reading.opposite[1]}'")
    if reading.swapped:
        cues.append("the claim swaps the roles of what the passage relates")
    if reading.missing_entities:
        cues.append(f"the passage does not name {', '.join(reading.missing_entities)}")
    return cues


@cache
def get_local_judge() -> LocalJudge:
    """The local judge with the shipped parameters and the product's embedder, each loaded once.

    The parameters were fitted on all-MiniLM-L6-v2 similarities (the default EMBEDDING_MODEL);
    another embedding model shifts the similarity feature, so retrain with it."""
    return LocalJudge(SoftmaxModel.load(MODEL_PATH), get_embedder(*_product_embedder_args()))


def _product_embedder_args() -> tuple:
    """The arguments the product passes to get_embedder, so that the judge shares its instance
    (and the model is loaded once); the defaults outside Django (scripts/train_judge.py)."""
    from django.conf import settings

    if settings.configured:
        return settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE
    return ()
