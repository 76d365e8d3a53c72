"""Whether passages mention what a text names: its names and numbers, looked up with the
allowances a reader makes (inflection, accents, a misspelt letter, a surname for a full name, an
acronym spelt out). The confidence gate asks it of the question, stage 2 of verification of a
claim against its quote."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

from rapidfuzz import fuzz

from apps.pipeline.judging.cues import STOP, fold, names_in, numbers_in, words

# A name matches a passage word of the same stem, or one a letter or two away once both are this
# long (Hartmanis / "Hatmanis", Hervé / "Herve"); numbers match exactly.
_FUZZY_MIN_CHARS = 5
_FUZZY_RATIO = 85.0
_ROMAN = re.compile(r"(?=[IVX]{2,})X{0,3}(?:IX|IV|V?I{0,3})")  # II to XXXIX: "I" and "V" alone are words too often
# Titles put before a name, which a passage naming the person need not repeat ("Professor Turing"
# for "Alan Turing", "Dr. Snow" for "John Snow"). Words that also begin names of things ("General
# Motors", "Saint Louis", "Justice Department") are left out.
_TITLES = frozenset(
    "mr mrs ms miss mx dr prof professor sir dame lord lady rev reverend president king queen prince "
    "princess emperor empress pope captain colonel admiral senator governor mayor".split()
)
# Abbreviated titles, which name no one alone: "Dr" is left alone when the full stop after it ends
# the name ("Dr. Snow"), where "Prince" or "the Queen" alone may be whom the question asks about.
_ABBREVIATED = frozenset("mr mrs ms mx dr prof rev".split())


def unmentioned(text: str, passages: Sequence[str]) -> list[str]:
    """The names (capitalised words after the first, words with inner capitals or digits) and
    the numbers in digits of `text` that none of the passages mentions ("What are two examples"
    asks for two, and names no number; a passage may give a number in words)."""
    joined = " ".join(passages)
    numbers = set(numbers_in(joined))
    passage_words = words(joined)
    vocabulary = set(passage_words)
    passage_names = names_in(joined)
    missing = [n for n in dict.fromkeys(numbers_in(text, spelled=False)) if n not in numbers]
    for name in dict.fromkeys(names_in(text)):
        bare = _untitled(name)
        if bare and not _name_mentioned(bare, vocabulary, passage_words, passage_names):
            missing.append(" ".join(name))
    return missing


def _untitled(name: tuple[str, ...]) -> tuple[str, ...]:
    """The name without the titles before it ("Professor Turing" → "Turing"); nothing is left of
    an abbreviated title alone ("Dr" of "Dr. Snow"), and a title alone stays ("Prince")."""
    if len(name) == 1 and fold(name[0]) in _ABBREVIATED:
        return ()
    start = 0
    while start < len(name) - 1 and fold(name[start]) in _TITLES:
        start += 1
    return name[start:]


def _name_mentioned(name: tuple[str, ...], vocabulary: set[str], passage_words: list[str], passage_names) -> bool:
    """A name is mentioned when each of its words is, or by its last word alone ("Alan Turing"
    by "Turing") unless a passage gives that word another name ("Millennium Prize Problems" for
    "Alpha Prize Problems"). A regnal number goes with its name: "Henry II" is not "Henry III"
    however many a passage's "II"s."""
    if len(name) > 1 and _ROMAN.fullmatch(name[-1]):
        return _adjacent(name[-2:], passage_words)
    mentioned = [_word_mentioned(token, vocabulary, passage_words) for token in name]
    if all(mentioned):
        return True
    if not mentioned[-1]:
        return False
    return not any(_renamed(name, other) for other in passage_names)


def _adjacent(pair: tuple[str, ...], passage_words: list[str]) -> bool:
    first, number = root(pair[0]), fold(pair[1])
    return any(root(a) == first and b == number for a, b in pairwise(passage_words))


def _renamed(name: tuple[str, ...], other: tuple[str, ...]) -> bool:
    """Whether the passage's name `other` ends where `name` ends but begins with a word of its
    own: "Millennium Prize Problems" against "Alpha Prize Problems"."""
    last = root(name[-1])
    ours = {root(token) for token in name}
    for index, token in enumerate(other):
        if root(token) == last:
            before = [root(t) for t in other[:index] if fold(t) not in STOP]
            if any(stem not in ours for stem in before):
                return True
    return False


def _word_mentioned(token: str, vocabulary: set[str], passage_words: list[str]) -> bool:
    if _is_acronym(token) and _spelled_out(token, passage_words):
        return True
    parts = [part for part in words(token) if not part.isdigit() and len(part) > 1]  # not "problem C"
    return all(_mentioned(part, vocabulary) for part in parts)


def _mentioned(word: str, vocabulary: set[str]) -> bool:
    if word in vocabulary:
        return True
    stem, roots = root(word), {root(known) for known in vocabulary}
    if stem in roots:
        return True
    return len(stem) >= _FUZZY_MIN_CHARS and any(
        len(known) >= _FUZZY_MIN_CHARS and fuzz.ratio(stem, known) >= _FUZZY_RATIO for known in roots
    )


def _is_acronym(name: str) -> bool:
    return 2 <= len(name) <= 6 and name.isalpha() and name.isupper()


def _spelled_out(acronym: str, passage_words: list[str]) -> bool:
    """Whether consecutive words of the passage begin with the acronym's letters ("PTO" in
    "paid time off")."""
    return acronym.lower() in "".join(w[0] for w in passage_words)


def root(word: str) -> str:
    """The word without a possessive or plural ending: "Normans", "Norman's" → "norman"."""
    word = fold(word).removesuffix("'s")
    if len(word) > 4 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
