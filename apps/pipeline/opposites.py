"""Words of opposite sense in general English, for the confidence gate: a question that asks
about what is "soft" where its passage says "hard", the "least" where it says the "most", or the
"second" where it says the "first", asks about something the passage does not say.

It starts from the antonym pairs of `judging.cues.ANTONYMS` (direction and change words) and
adds general English and the words a prefix negates ("limited" / "unlimited"). Converse relations
("brother" / "sister", "buy" / "sell") are left out on purpose: "Who was Emma's brother?" is
answered by "Emma, sister of Richard". So are comparisons ("same" / "different"): two things are
done "at the same time" where a passage says they are not done at different ones."""

from __future__ import annotations

from collections.abc import Iterable

from apps.pipeline.judging.cues import ANTONYMS, is_negation

_PAIRS = """
hard soft | harder softer | hard easy | harder easier | hardest easiest | easy difficult |
difficult simple | simple complex | simpler complex | simplest hardest | have lack | has lacks |
had lacked | having lacking | lot little | much little | many few | more less | more fewer |
most least | most fewest | plenty few | all none | all some | always never | always sometimes |
often rarely | often seldom | frequently rarely | commonly rarely | usually rarely | common rare |
commonest rarest | everything nothing | everyone nobody | high low | higher lower |
highest lowest | large small | larger smaller | largest smallest | big small | bigger smaller |
biggest smallest | huge tiny | long short | longer shorter | longest shortest | tall short |
wide narrow | wider narrower | widest narrowest | broad narrow | deep shallow | thick thin |
heavy light | heavier lighter | full empty | major minor | greater lesser | maximum minimum |
maximal minimal | upper lower | top bottom | above below | over under | inner outer |
inside outside | internal external | interior exterior | front back | forward backward |
ahead behind | north south | east west | northern southern | eastern western |
northernmost southernmost | up down | upward downward | rise fall | rises falls | rose fell |
risen fallen | increase decrease | increased decreased | increases decreases |
increasing decreasing | increase reduce | gain loss | gained lost | gain lose | win lose |
won lost | wins loses | winner loser | victory defeat | victorious defeated | success failure |
successful unsuccessful | succeed fail | succeeded failed | early late | earlier later |
earliest latest | before after | first last | beginning end | begin end | began ended | start end |
started ended | start finish | open close | opened closed | open closed | past future |
ancient modern | old new | older newer | oldest newest | old young | older younger |
oldest youngest | fresh stale | fast slow | faster slower | fastest slowest | quick slow |
quickly slowly | rapid slow | rapidly slowly | strong weak | stronger weaker | strongest weakest |
strength weakness | best worst | better worse | good bad | good evil | positive negative |
true false | right wrong | correct incorrect | accurate inaccurate | valid invalid |
legal illegal | legitimate illegitimate | possible impossible | probable improbable |
likely unlikely | able unable | capable incapable | known unknown | certain uncertain |
clear unclear | visible invisible | proven unproven | proved disproved | prove disprove |
confirm refute | confirmed refuted | agree disagree | agreed disagreed | accept reject |
accepted rejected | accepts rejects | acceptance rejection | approve disapprove |
approved disapproved | allow forbid | allowed forbidden | allow prohibit | allowed prohibited |
permit forbid | permitted forbidden | include exclude | included excluded | includes excludes |
inclusion exclusion | inclusive exclusive | join leave | enter exit | entered exited |
arrive depart | arrived departed | arrival departure | import export | imports exports |
imported exported | importer exporter | push pull | attack defend | attacked defended |
attacker defender | offense defense | offensive defensive | friend enemy | friendly hostile |
ally enemy | allies enemies | allied hostile | peace war | love hate | loved hated | like dislike |
liked disliked | praise criticize | praised criticized | support oppose | supported opposed |
supporter opponent | pro anti | rich poor | richer poorer | wealthy poor | wealth poverty |
cheap expensive | cheaper costlier | private public | secret public | formal informal |
official unofficial | military civilian | secular religious | sacred profane | native foreign |
domestic foreign | local foreign | national international | urban rural | land sea | dark light |
darker lighter | day night | hot cold | warm cool | wet dry | solid liquid | living dead |
alive dead | life death | birth death | born died | married single | male female | men women |
masculine feminine | plural singular | finite infinite | bounded unbounded | limited unlimited |
restricted unrestricted | restrict expand | efficient inefficient | solvable unsolvable |
decidable undecidable | tractable intractable | complete incomplete | consistent inconsistent |
deterministic nondeterministic | exact approximate | exactly approximately | precise imprecise |
direct indirect | directly indirectly | connected unconnected | connected disconnected |
dependent independent | related unrelated | necessary unnecessary | sufficient insufficient |
relevant irrelevant | important unimportant | significant insignificant | regular irregular |
normal abnormal | usual unusual | typical atypical | natural artificial | natural unnatural |
real fictional | real imaginary | actual hypothetical | superior inferior | senior junior |
primary secondary | permanent temporary | constant variable | fixed variable | static dynamic |
active passive | active inactive | present absent | presence absence | visible hidden |
include omit | add remove | added removed | add subtract | multiply divide |
multiplication division | sequential parallel | serial parallel | ascend descend |
ascending descending | upstream downstream | inbound outbound |
accept refuse | accepted refused | captured released | capture release | built destroyed |
build destroy | create destroy | created destroyed | construction destruction | freed enslaved |
free enslaved | freedom slavery | independence dependence | rise decline | growth decline
"""

_COMPARISONS = frozenset({"same", "similar", "different"})
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "last")

# a prefix that negates the word it is put before: "unlimited", "inaccurate", "nondeterministic"
_NEGATING_PREFIXES = ("un", "in", "im", "ir", "il", "non", "dis")
_MIN_STEM = 4


def _table() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {word: set(rivals) - _COMPARISONS for word, rivals in ANTONYMS.items() if word not in _COMPARISONS}
    for pair in _PAIRS.split("|"):
        a, b = pair.split()
        table.setdefault(a, set()).add(b)
        table.setdefault(b, set()).add(a)
    for ordinal in _ORDINALS:
        table.setdefault(ordinal, set()).update(o for o in _ORDINALS if o != ordinal)
    return {word: frozenset(rivals) for word, rivals in table.items()}


OPPOSITES = _table()


def _prefixed(word: str) -> set[str]:
    """The word with a negating prefix put on or taken off ("unknown" / "known")."""
    found = set()
    for prefix in _NEGATING_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= _MIN_STEM:
            found.add(word[len(prefix) :])
        if len(word) >= _MIN_STEM:
            found.add(prefix + word)
    return found


def opposed(text_words: Iterable[str], passage_words: Iterable[str]) -> list[tuple[str, str]]:
    """(word, rival) for each word of the text the passage does not use while it uses a word of
    opposite sense. A text that names both ("simple or complex?") asks which, and opposes
    nothing; nor does a negated text ("not easy" is "difficult"), nor a prefix where the passage
    negates ("unknown" against "is not known")."""
    text, passage = list(dict.fromkeys(text_words)), set(passage_words)
    if any(is_negation(w) for w in text):
        return []
    negates = any(is_negation(w) for w in passage)
    asked = set(text)
    found = []
    for word in text:
        if word in passage:
            continue
        prefixed = _prefixed(word)
        every = OPPOSITES.get(word, frozenset()) | prefixed
        if every & asked:
            continue
        rival = sorted((every - prefixed if negates else every) & passage)
        if rival:
            found.append((word, rival[0]))
    return found
