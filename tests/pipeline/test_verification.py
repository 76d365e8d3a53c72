"""Claim verification: the quote locator (stage 1) and how verify_answer hands located quotes to a judge."""

from __future__ import annotations

from apps.pipeline.types import Answer, Candidate, Claim, Judgement
from apps.pipeline.verification import locate_quote, normalise_with_map, verify_answer
from apps.pipeline.verifier_judge import get_local_judge


class RecordingJudge:
    """A judge that answers a fixed verdict and remembers every call."""

    name = "recording"

    def __init__(self, verdict: str = "supports"):
        self.verdict = verdict
        self.calls: list[tuple[str, str, int, int]] = []

    def judge(self, claim: str, passage: str, quote_start: int, quote_end: int) -> Judgement:
        self.calls.append((claim, passage, quote_start, quote_end))
        return Judgement(self.verdict, f"recorded {self.verdict}", 0.9)


def source(text: str, *, start: int = 0, title: str = "Lighthouse notes", chunk: str = "c1") -> Candidate:
    return Candidate(chunk, "d1", title, 0, text, start, start + len(text), 1, 0.9, None, None, 0.5)


def answer(*claims: Claim) -> Answer:
    return Answer(text="an answer", claims=claims, insufficient=False, provider="test")


LIGHTHOUSE = (
    "The lighthouse stands on the northern cape. It was completed in 1844 and is 48 metres tall. "
    "Its lamp was electrified in 1921. Visitors may climb it in summer."
)


# ---------------------------------------------------------------- stage 1: the locator


def test_pdf_hyphenation_at_a_line_break_is_undone_and_offsets_cover_the_original_text():
    text = "Claims pass a two-stage verifi-\ncation before anyone reads them."
    location = locate_quote("a two-stage verification before anyone", text, 90)
    assert location.status == "located"
    assert location.method == "exact"
    assert text[location.start : location.end] == "a two-stage verifi-\ncation before anyone"


def test_nfkc_ligatures_and_full_width_digits_match_their_plain_forms():
    text = "Intro. The ﬁrst trial enrolled １２０ patients. End."
    location = locate_quote("The first trial enrolled 120 patients.", text, 90)
    assert (location.status, location.method) == ("located", "exact")
    assert text[location.start : location.end] == "The ﬁrst trial enrolled １２０ patients."


def test_curly_quotes_dashes_case_and_spacing_do_not_matter():
    text = "Intro.  The “verified” mode —  with its gate —\nrefuses weak answers. Outro."
    location = locate_quote('the "verified" mode - with its gate - refuses weak answers.', text, 90)
    assert location.method == "exact"
    assert text[location.start : location.end] == "The “verified” mode —  with its gate —\nrefuses weak answers."


def test_an_ellipsis_character_matches_three_dots():
    text = "He said: wait… then nothing happened."
    location = locate_quote("wait... then nothing happened", text, 90)
    assert location.method == "exact"
    assert text[location.start : location.end] == "wait… then nothing happened"


def test_a_quote_with_an_elision_is_located_from_its_first_to_its_last_piece():
    location = locate_quote("It was completed in 1844 … is 48 metres tall.", LIGHTHOUSE, 90)
    assert location.status == "located"
    assert location.method == "elided"
    assert LIGHTHOUSE[location.start : location.end] == "It was completed in 1844 and is 48 metres tall."


def test_elided_pieces_out_of_order_are_not_located():
    location = locate_quote("Its lamp was electrified ... It was completed in 1844", LIGHTHOUSE, 90)
    assert location.status == "hallucinated_quote"


def test_a_misspelt_quote_is_located_fuzzily_with_its_score():
    location = locate_quote("It was completed in 1844 and is 48 meters tall.", LIGHTHOUSE, 90)
    assert location.method == "fuzzy"
    assert 90 <= location.score < 100
    assert LIGHTHOUSE[location.start : location.end] == "It was completed in 1844 and is 48 metres tall."


def test_a_close_quote_with_another_number_is_not_the_source_text():
    location = locate_quote("It was completed in 1844 and is 84 metres tall.", LIGHTHOUSE, 90)
    assert location.score >= 90, "close enough for fuzzy matching alone"
    assert location.status == "hallucinated_quote"
    assert "numbers" in location.detail


def test_a_close_quote_with_a_negation_added_is_not_the_source_text():
    location = locate_quote("Visitors may not climb it in summer.", LIGHTHOUSE, 90)
    assert location.score >= 90
    assert location.status == "hallucinated_quote"


def test_a_quote_below_the_threshold_is_hallucinated_and_keeps_its_score():
    location = locate_quote("The bridge opened to traffic in 1932 after four years of work.", LIGHTHOUSE, 90)
    assert location.status == "hallucinated_quote"
    assert location.start is None
    assert 0 < location.score < 90


def test_normalised_text_maps_each_character_back_to_its_origin():
    text = "A  “B”\u00adC—D"
    normalised, origin = normalise_with_map(text)
    assert normalised == 'a "b"c-d'
    assert [text[i] for i in origin] == ["A", " ", "“", "B", "”", "C", "—", "D"]


# ---------------------------------------------------------------- verify_answer and the judge


def test_fabricated_quote_is_flagged_without_judge_call():
    judge = RecordingJudge()
    claim = Claim("The lighthouse is 48 metres tall.", 1, "The lighthouse, 48 metres tall, was built of granite blocks in 1844.")
    [verified] = verify_answer(answer(claim), [source(LIGHTHOUSE)], locator_threshold=90, judge=judge)
    assert verified.verdict == "hallucinated_quote"
    assert not verified.faithful
    assert judge.calls == []
    assert verified.judge == "none"
    assert verified.rationale.startswith("the quote is not in the cited source")


def test_a_located_quote_is_judged_from_its_sentence_and_the_sentences_around_it():
    judge = RecordingJudge("supports")
    claim = Claim("The lighthouse is 48 m tall.", 1, "It was completed in 1844 and is 48 metres tall.")
    [verified] = verify_answer(answer(claim), [source(LIGHTHOUSE, start=1000)], locator_threshold=90, judge=judge)
    [(claim_text, passage, start, end)] = judge.calls
    assert claim_text == "The lighthouse is 48 m tall."
    assert (
        passage
        == "The lighthouse stands on the northern cape. It was completed in 1844 and is 48 metres tall. Its lamp was electrified in 1921."
    )
    assert passage[start:end] == "It was completed in 1844 and is 48 metres tall."
    assert (verified.verdict, verified.faithful, verified.judge) == ("supports", True, "recording")
    assert verified.rationale == "recorded supports"
    # offsets in the document: the chunk starts at character 1000
    assert (verified.location.start, verified.location.end) == (1000 + LIGHTHOUSE.index("It was"), 1000 + LIGHTHOUSE.index(" Its lamp"))


def test_a_located_quote_the_judge_does_not_support_is_unfaithful():
    judge = RecordingJudge("partial")
    claim = Claim("Everyone climbs the lighthouse in summer.", 1, "Visitors may climb it in summer.")
    [verified] = verify_answer(answer(claim), [source(LIGHTHOUSE)], locator_threshold=90, judge=judge)
    assert verified.location.status == "located"
    assert verified.verdict == "partial"
    assert not verified.faithful


def test_a_quote_found_in_another_source_is_recorded_as_misattributed():
    judge = RecordingJudge()
    other_text = "Ferries leave the harbour hourly. The crossing takes forty minutes."
    sources = [source(LIGHTHOUSE), source(other_text, start=500, title="Ferry timetable", chunk="c2")]
    claim = Claim("The crossing takes forty minutes.", 1, "The crossing takes forty minutes.")
    [verified] = verify_answer(answer(claim), sources, locator_threshold=90, judge=judge)
    assert verified.verdict == "hallucinated_quote"
    assert not verified.faithful
    assert judge.calls == []
    assert verified.location.misattributed
    assert verified.location.found_in == 2
    assert verified.rationale == "misattributed: the quote is in source 2, not in the cited source"
    found = verified.location.found_start - 500, verified.location.found_end - 500
    assert other_text[found[0] : found[1]] == "The crossing takes forty minutes."


def test_a_claim_citing_a_source_that_does_not_exist_is_hallucinated_without_judge_call():
    judge = RecordingJudge()
    [verified] = verify_answer(
        answer(Claim("Anything.", 3, "It was completed in 1844")), [source(LIGHTHOUSE)], locator_threshold=90, judge=judge
    )
    assert verified.verdict == "hallucinated_quote"
    assert verified.source_title == "(no such source)"
    assert verified.location.found_in == 1, "the quote is in source 1, not the cited source 3"
    assert judge.calls == []


def test_the_local_judge_grades_a_claim_that_is_its_quote_as_supported():
    claim = Claim("It was completed in 1844 and is 48 metres tall.", 1, "It was completed in 1844 and is 48 metres tall.")
    [verified] = verify_answer(answer(claim), [source(LIGHTHOUSE)], locator_threshold=90, judge=get_local_judge())
    assert verified.judge == "verifier"
    assert verified.verdict == "supports"
    assert verified.faithful
    assert verified.rationale


def test_a_claim_whose_document_was_deleted_cannot_be_checked_and_is_no_hallucination():
    """Re-verification after a cited document is deleted: nothing to look for the quote in."""
    from apps.pipeline.trust import TrustWeights, trust_score

    judge = RecordingJudge()
    kept = Claim("It was completed in 1844.", 1, "It was completed in 1844")
    lost = Claim("Its lamp was electrified in 1921.", 2, "Its lamp was electrified in 1921.")
    checked, unchecked = verify_answer(
        answer(kept, lost), [source(LIGHTHOUSE), source("", chunk="c2")], locator_threshold=90, judge=judge, gone=frozenset({2})
    )
    assert checked.verdict == "supports"
    assert (unchecked.verdict, unchecked.location.status, unchecked.faithful) == ("source_deleted", "source_deleted", False)
    assert unchecked.rationale == "the cited document was deleted: this claim cannot be checked"
    assert len(judge.calls) == 1, "only the claim whose source is there is judged"
    trust = trust_score(retrieval=0.9, agreement=0.9, verified=[checked, unchecked], refused=False, weights=TrustWeights())
    assert trust.risk != "low"
    assert "1 of 2 claim(s) cannot be checked: their document was deleted" in trust.reasons


def test_a_table_row_is_judged_under_its_column_headings_however_far_above_they_are():
    rows = "\n".join(f"Town {n} | {n * 10} | {n * 3}" for n in range(1, 30))
    table = f"Harbour towns\n\nTown | Boats | Piers\n{rows}\n\nThe counts are for 2020."
    judge = RecordingJudge("supports")
    quote = "Town 25 | 250 | 75"
    claim = Claim("Town 25 — Boats: 250; Piers: 75", 1, quote)
    [verified] = verify_answer(answer(claim), [source(table)], locator_threshold=90, judge=judge)
    [(_, passage, start, end)] = judge.calls
    assert passage.startswith("Town | Boats | Piers\n")
    assert passage[start:end] == quote
    assert verified.location.start == table.index(quote), "offsets still point into the document"
    # Prose is judged from its own sentences only.
    judge = RecordingJudge("supports")
    verify_answer(
        answer(Claim("The counts are for 2020.", 1, "The counts are for 2020.")), [source(table)], locator_threshold=90, judge=judge
    )
    assert not judge.calls[0][1].startswith("Town | Boats | Piers")
