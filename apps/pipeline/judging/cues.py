"""Words and cues a claim is read by: folding, words, stems, numbers, negation, direction and
names. The local judge's deterministic checks, the gate, the mention check and the quote locator
ask them."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?(?:-[^\W_]+)*")
_NUMBER = re.compile(r"(?<![^\W\d_])(?<![^\W\d_]-)(?<![\d.,])\d+(?:[.,]\d+)*")
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
