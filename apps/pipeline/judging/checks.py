"""The deterministic checks the local judge runs beside its model: general rules that say, without
a model, that a quote cannot support a claim — a number the passage does not state or states
otherwise, a negation on one side only, the claim's roles swapped. They veto a tentative
`supports`; they do not flag a claim on their own (measured as flags they cried wolf:
docs/verifier.md)."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from apps.pipeline.judging.cues import STOP, direction, entities_in, is_negation, numbers_in, stem, words


@dataclass(frozen=True)
class Checks:
    missing_numbers: tuple[str, ...]  # the claim's numbers the passage does not state
    renumbered: tuple[str, str] | None  # (the claim's number, the quote's) where one replaces the other
    negation_mismatch: bool  # one of claim and quote negated (where it bears on the other), the other not
    swapped: bool  # the claim's names on the other sides of the relation than in the quote

    def veto(self) -> str:
        """Why the passage cannot support the claim, or "" when no check fires."""
        if self.renumbered:
            return f"the claim says {self.renumbered[0]} where the passage says {self.renumbered[1]}"
        if self.missing_numbers:
            return f"the passage does not state {', '.join(self.missing_numbers)}"
        if self.negation_mismatch:
            return "one of claim and quote is negated, the other not"
        if self.swapped:
            return "the claim swaps the roles of what the passage relates"
        return ""


def check(claim: str, passage: str, quote_start: int, quote_end: int) -> Checks:
    """The checks of `claim` against the quote passage[quote_start:quote_end] (numbers: against
    the whole passage, which holds the quote's neighbours too)."""
    quote = passage[quote_start:quote_end] or passage
    c_tokens, q_tokens = words(claim), words(quote)
    stated = set(numbers_in(passage))
    missing = tuple(n for n in dict.fromkeys(numbers_in(claim)) if n not in stated)
    c_stems, q_stems = {stem(t) for t in c_tokens}, {stem(t) for t in q_tokens}
    negated = (_scoped_negations(c_tokens, q_stems) + _scoped_negations(q_tokens, c_stems)) % 2 == 1
    # Roles are read around the relation word both share, never from word order alone: a claim
    # that reorders its quote's clauses ("LDL falls by 20 % with statins") swaps nothing.
    return Checks(missing, _renumbered(c_tokens, q_tokens), negated, _swap(claim, c_tokens, q_tokens) > 0.3)


def _scoped_negations(tokens: list[str], other_stems: set[str], reach: int = 4) -> int:
    """Negations that bear on what the other text talks about: one of the next few words is
    shared ("not associated with X" counts against a claim about X; "but not in adults" does not)."""
    return sum(
        1
        for i, token in enumerate(tokens)
        if is_negation(token) and any(stem(t) in other_stems for t in tokens[i + 1 : i + 1 + reach] if t not in STOP)
    )


def _renumbered(c_tokens: list[str], q_tokens: list[str]) -> tuple[str, str] | None:
    """(the claim's number, the quote's) where, word by word, one replaces the other."""
    matcher = SequenceMatcher(None, q_tokens, c_tokens, autojunk=False)
    for op, q0, q1, c0, c1 in matcher.get_opcodes():
        if op == "replace":
            claimed, quoted = [t for t in c_tokens[c0:c1] if t.isdigit()], [t for t in q_tokens[q0:q1] if t.isdigit()]
            if claimed and quoted:
                return claimed[0], quoted[0]
    return None


_BE = frozenset("is are was were be been being".split())


def _content(token: str) -> bool:
    return token not in STOP and not is_negation(token) and not token.isdigit()


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
    ("ATM directly phosphorylates Cdk5"), else a shared word of direction ("increases")."""
    seen_names, candidate = 0, None
    for s in (stem(t) for t in c_tokens if _content(t) and stem(t) in quote_stems):
        if s in names:
            seen_names += 1
            if seen_names == 2 and candidate:
                return candidate
        elif seen_names == 1:
            candidate = s
    for token in c_tokens:
        if direction(token) and stem(token) in quote_stems:
            return stem(token)
    return None
