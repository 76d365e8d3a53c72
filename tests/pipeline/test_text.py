"""Plain-Python pipeline stages: sentence spans, chunking, the quote locator, the keyword query."""

from __future__ import annotations

from apps.pipeline.text import chunk_text, sentence_spans
from apps.pipeline.verification import locate_quote

TEXT = (
    "TrustRAG checks every quote. It refuses when evidence is weak, e.g. when nothing matches. "
    "Dr. Smith wrote the first design in 2024! Was it good? Yes.\n\n"
    "A new paragraph starts here without a full stop\n\nAnd another one."
)


def test_sentences_end_at_punctuation_and_blank_lines_but_not_abbreviations():
    sentences = [TEXT[s.start : s.end] for s in sentence_spans(TEXT)]
    assert sentences == [
        "TrustRAG checks every quote.",
        "It refuses when evidence is weak, e.g. when nothing matches.",
        "Dr. Smith wrote the first design in 2024!",
        "Was it good?",
        "Yes.",
        "A new paragraph starts here without a full stop",
        "And another one.",
    ]


def test_sentences_run_together_without_a_space_are_read_apart_but_abbreviations_stay_whole():
    text = (
        'Cooking Light is a food magazine founded in 1987.Hot Rod is a car magazine. He wrote "Beowulf".Beowulf '
        "is a film. The U.S.Army camp near St.Louis is No.5 on the list. Use a trowel, e.g.The small one."
    )
    assert [text[s.start : s.end] for s in sentence_spans(text)] == [
        "Cooking Light is a food magazine founded in 1987.",
        "Hot Rod is a car magazine.",
        'He wrote "Beowulf".',
        "Beowulf is a film.",
        "The U.S.Army camp near St.Louis is No.5 on the list.",
        "Use a trowel, e.g.The small one.",
    ]


def test_chunks_never_cut_a_sentence_and_their_offsets_point_into_the_text():
    text = " ".join(f"Sentence number {i} talks about topic {i % 7} at some length." for i in range(60))
    sentences = {text[s.start : s.end] for s in sentence_spans(text)}
    chunks = chunk_text(text, size=300, overlap=80)
    assert len(chunks) > 5
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert len(chunk.text) <= 300
        assert chunk.text.startswith("Sentence number")
        assert chunk.text.endswith("length.")
        assert all(chunk.text[x.start : x.end] in sentences for x in sentence_spans(chunk.text))
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert chunks[1].start < chunks[0].end, "consecutive chunks overlap by whole sentences"
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_a_sentence_longer_than_a_chunk_is_cut_into_pieces():
    text = "word " * 200
    chunks = chunk_text(text.strip(), size=100, overlap=20)
    assert all(len(c.text) <= 100 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")


def test_exact_quote_is_located_through_case_whitespace_quote_marks_and_dashes():
    source = "Intro.  The “verified” mode —  with its gate —\nrefuses weak answers. Outro."
    location = locate_quote('the "verified" mode - with its gate - refuses weak answers.', source, 90)
    assert location.status == "located"
    assert location.method == "exact"
    assert source[location.start : location.end] == "The “verified” mode —  with its gate —\nrefuses weak answers."


def test_near_verbatim_quote_is_located_fuzzily_with_its_score_and_offsets():
    source = "Intro text here. The lighthouse was completed in 1844 and is 48 metres tall. More text follows."
    location = locate_quote("The lighthouse was completed in 1844 and is 48 meters tall.", source, 90)
    assert location.status == "located"
    assert location.method == "fuzzy"
    assert 90 <= location.score < 100
    assert source[location.start : location.end] == "The lighthouse was completed in 1844 and is 48 metres tall."


def test_fabricated_quote_is_flagged_as_hallucinated():
    source = "The lighthouse was completed in 1844 and is 48 metres tall."
    location = locate_quote("The bridge opened to traffic in 1932 after four years of work.", source, 90)
    assert location.status == "hallucinated_quote"
    assert location.start is None
    assert location.score < 90
