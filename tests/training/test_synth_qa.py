"""The SQuAD-2-style answerability pairs the verifier is trained on: seeded, and each negative
really changes what the question asks (or what it is asked against)."""

import random
from collections import Counter

from training.verifier import synth_qa as S

DOCS = [
    [
        "Soul Food is a 1997 American comedy-drama film produced by Kenneth Edmonds and released by Fox 2000 Pictures.",
        "The film was shot in Chicago over eight weeks in the summer.",
        "It earned the largest opening of any drama that year and won three awards.",
    ],
    [
        "Providence is the capital of Rhode Island and was founded in 1636 by Roger Williams.",
        "Brown University is located in the College Hill district of the city.",
    ],
    [
        "The bridge was opened in 1932 and carries four lanes of traffic across the northern harbour.",
        "It was designed by the engineer John Bradfield, who was born in Sandgate.",
    ],
]


def test_the_same_seed_gives_the_same_pairs_and_another_seed_other_pairs():
    assert S.pairs_from(DOCS, 60, seed=3) == S.pairs_from(DOCS, 60, seed=3)
    assert S.pairs_from(DOCS, 60, seed=3) != S.pairs_from(DOCS, 60, seed=4)


def test_pairs_are_two_fifths_answerable_and_every_negative_kind_occurs():
    pairs = S.pairs_from(DOCS, 400, seed=0)
    assert len(pairs) == 400
    assert sum(p.answerable for p in pairs) == 160
    kinds = Counter(p.kind for p in pairs if not p.answerable)
    assert set(kinds) == set(S.NEGATIVE_KINDS), kinds
    assert all(p.question.endswith("?") and p.question[0].isupper() for p in pairs)


def test_an_answerable_question_asks_for_a_span_its_context_holds():
    sentence = DOCS[1][0]
    rng = random.Random(0)
    year = next(s for s in S._spans(sentence) if s[2] == "in what year")
    assert sentence[year[0] : year[1]] == "in 1636"
    question = S.question_for(sentence, year, rng)
    assert question.endswith("in what year?")
    assert "1636" not in question
    subject = next(s for s in S._spans(sentence) if s[0] == 0)
    assert S.question_for(sentence, subject, random.Random(0)).startswith("What is the capital of Rhode Island")


def test_each_negative_changes_the_question_or_its_context_so_the_answer_is_gone():
    question = "Providence is the capital of Rhode Island and was founded in 1636 by whom?"
    pool = [s for doc in DOCS for s in doc]
    rng = random.Random(1)
    context = S._window(DOCS[1], 0)
    negation = S._negative(question, "negation", DOCS[1], 0, pool, rng)
    assert negation == (context, question.replace("is the", "is not the", 1))
    number = S._negative(question, "swap_number", DOCS[1], 0, pool, rng)
    assert number[0] == context
    assert "1636" not in number[1]
    assert number[1] != question
    name = S._negative(question, "swap_name", DOCS[1], 0, pool, rng)
    swapped_in = set(name[1].split()) - set(question.split())
    assert swapped_in
    assert not any(w in context for w in swapped_in)
    other = S._negative("It was designed by whom?", "other_sentence", DOCS[2], 1, pool, rng)
    assert other == (DOCS[2][0], "It was designed by whom?")
    antonym = S._negative("It earned the largest opening of any drama in what year?", "antonym", DOCS[0], 2, pool, rng)
    assert antonym[1] == "It earned the smallest opening of any drama in what year?"
    assert S._negative("Who built it in what year?", "antonym", DOCS[0], 2, pool, rng) is None


def test_the_evaluation_articles_are_kept_out():
    assert S.EXCLUDED_TOPICS.search("The Normans were the people who gave their name to Normandy.")
    assert S.EXCLUDED_TOPICS.search("Computational complexity theory classifies problems.")
    assert not S.EXCLUDED_TOPICS.search(DOCS[0][0])
