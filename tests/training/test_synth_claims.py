"""The claim/quote pairs the verifier is trained on for the product's task: seeded, positives
restate their sentence without changing a fact, and each negative changes one."""

import random
import re
from collections import Counter

from training.verifier import data as D
from training.verifier import synth_claims as S

DOCS = [
    [
        "In 1997, the studio released a comedy film that earned 25% of its budget in the first week.",
        "The film was shot in Chicago over 8 weeks in the summer.",
        "It received three awards, which were presented by the city's mayor.",
        "The director, Kenneth Edmonds (a former musician), began working on a sequel in 2001.",
    ],
    [
        "Providence is the capital of Rhode Island and was founded in 1636 by Roger Williams.",
        "Brown University is located in the College Hill district of the city.",
        "The city has a population of 190,934 people.",
    ],
    [
        "The bridge was opened in 1932 and carries four lanes of traffic across the northern harbour.",
        "It was designed by the engineer John Bradfield, who was born in Sandgate.",
        "During the war, the bridge was not closed to traffic.",
    ],
]


def _numbers(text: str) -> set[float]:
    return {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}


def test_the_same_seed_gives_the_same_pairs_and_another_seed_other_pairs():
    assert S.pairs_from(DOCS, 80, seed=3) == S.pairs_from(DOCS, 80, seed=3)
    assert S.pairs_from(DOCS, 80, seed=3) != S.pairs_from(DOCS, 80, seed=4)


def test_half_are_supported_and_every_negative_kind_occurs():
    pairs = S.pairs_from(DOCS, 600, seed=0)
    assert len(pairs) == 600
    assert sum(p.target == (S.SUPPORTS,) for p in pairs) == 300
    kinds = Counter(p.kind for p in pairs if p.target != (S.SUPPORTS,))
    assert set(kinds) == set(S.NEGATIVE_KINDS), kinds
    assert all(p.target == S.TARGETS[p.kind] for p in pairs if p.target != (S.SUPPORTS,))


def test_a_positive_keeps_every_number_of_its_sentence_and_adds_none():
    for p in S.pairs_from(DOCS, 400, seed=1):
        if p.target == (S.SUPPORTS,) and "number_form" not in p.kind:
            assert _numbers(p.claim) <= _numbers(p.quote), p


def test_restatements_say_the_same_fact_in_other_words():
    rng = random.Random(0)
    assert S.number_form("It rose by 25% in the trial.", rng) in {
        "It rose by 25 percent in the trial.",
        "It rose by 25 per cent in the trial.",
    }
    assert S.number_form("The city has 190,934 people.", rng) == "The city has 190934 people."
    assert S.number_form("It won 3 awards in 1999.", rng) == "It won three awards in 1999."  # a year is never restated
    assert S.move_phrase("In 1997, the studio released a film.", rng) == "The studio released a film in 1997."
    assert (
        S.drop_part("The director, Kenneth Edmonds (a former musician), began a sequel.", rng)
        == "The director, Kenneth Edmonds, began a sequel."
    )
    assert S.synonym("The film began in May.", rng) in {"The movie began in May.", "The film started in May."}


def test_each_negative_changes_the_fact_it_names():
    rng = random.Random(0)
    sents = DOCS[2]
    window = " ".join(sents[:2])
    changed = S.change_fact("number", sents[0], sents, 0, sents, window, rng)
    assert _numbers(changed) != _numbers(sents[0])
    assert not re.search(r"\b1932\b", changed)
    assert "not" in S.change_fact("negation", sents[0], sents, 0, sents, window, rng).split()
    assert "not" not in S.change_fact("negation", sents[2], sents, 2, sents, sents[2], rng).split()
    antonym = S.change_fact("antonym", sents[0], sents, 0, sents, window, rng)
    assert antonym in {sents[0].replace("opened", "closed"), sents[0].replace("northern", "southern")}
    assert re.search(r"\b(only|always)\b", S.change_fact("qualifier", sents[1], sents, 1, sents, window, rng))


def test_a_negative_restated_never_loses_its_changed_fact():
    """Restating a negative never leaves a part out: the part may be the changed fact."""
    assert "drop_part" not in S.KEEPING
    pairs = [p for p in S.pairs_from(DOCS, 600, seed=2) if p.kind in {"qualifier", "added_detail"}]
    assert pairs
    for p in pairs:
        if p.kind == "qualifier":
            assert re.search(r"\b(only|always)\b", p.claim), p
        else:  # the detail added comes from outside the quote's window, and stays
            added = re.findall(r"\b(?:in|by|with|for|at) [A-Z0-9][\w-]*(?: [A-Z][\w-]*)*", p.claim)[-1]
            assert added not in p.quote, p


def test_the_test_side_of_a_set_is_never_in_its_training_side():
    assert D.is_test_premise("A  premise\\nwith spacing") == D.is_test_premise("A premise\\nwith spacing")
    train = {e.premise for e in D.nli_examples("fever_symmetric")}
    test = {e.premise for e in D.nli_examples("fever_symmetric", "test")}
    assert train
    assert test
    assert not train & test
    assert 0.05 < len(test) / (len(train) + len(test)) < 0.15


def test_a_left_out_set_is_not_trained_on_and_the_budget_is_shared_by_the_others():
    full = D.shipped_mix(3000, 200, 0, synth_claim_pairs=400)
    without = D.shipped_mix(3000, 200, 0, synth_claim_pairs=400, leave_out=frozenset({"fever_nli", "synth_claims"}))
    assert {"fever_nli", "synth_claims"} <= {e.source for e in full}
    assert not {"fever_nli", "synth_claims"} & {e.source for e in without}
    nli = lambda ex: sum(e.task == 0 and e.source != "synth_claims" for e in ex)  # noqa: E731
    assert abs(nli(full) - nli(without)) <= 10


def test_squad_answerability_never_trains_on_the_articles_it_is_measured_on():
    measured = {"Normans", "Computational_complexity_theory"}  # dev.json: the learning curve's and bench_gate's default
    titles = {a["title"] for a in D.squad_train_articles()}
    assert titles
    assert not titles & measured
    examples = D.squad_examples(400, random.Random(0))
    assert {e.target for e in examples} == {(0,), (1,)}
    assert all(e.task == 1 and e.source == "squad_dev8" for e in examples)
    # an answerable question is read against the sentence holding its answer
    article = D.squad_train_articles()[0]
    qa = next(qa for p in article["paragraphs"] for qa in p["qas"] if not qa.get("is_impossible"))
    pairs = [e for e in D.squad_examples(10**6, random.Random(0), [article]) if e.hypothesis == qa["question"] and e.target == (1,)]
    assert pairs
    assert all(qa["answers"][0]["text"] in e.premise for e in pairs)
