"""Table rows as units: read (with their table's heading line), picked by the extractive
provider and quoted verbatim, in the text pypdf and python-docx give of real tables; and the
provider leading with the unit that holds what the question asks for."""

from __future__ import annotations

import pytest

from apps.pipeline.embedding import get_embedder
from apps.pipeline.generation import (
    MEASURE,
    NUMBER,
    ExtractiveParams,
    asked_for,
    claimable,
    holds,
    is_heading,
    local_extractive_answer,
    units_of,
)
from apps.pipeline.parsing import extract
from apps.pipeline.text import chunk_text, is_table_row, row_statement, sentence_spans, table_header
from apps.pipeline.types import Candidate
from apps.pipeline.verification import locate_quote
from tests.conftest import ROOT

DOCS = ROOT.parent / "shared" / "data" / "docs"
NICS = DOCS / "pdf" / "nics-background-checks-2015-11.pdf"
TEXAS = "How many firearm background checks were run in Texas?"


@pytest.fixture(scope="module")
def nics() -> str:
    return extract(NICS.name, NICS.read_bytes()).text


def units(text: str) -> list[str]:
    return [text[s.start : s.end] for s in sentence_spans(text)]


def candidate(text: str, start: int = 0, **fields) -> Candidate:
    return Candidate("c1", "d1", "nics.pdf", 0, text, start, start + len(text), 1, 0.6, 1, 9.0, 0.03, **fields)


def answer(question: str, sources: list[Candidate], **params):
    embedder = get_embedder()
    vector = embedder.embed([question])[0]
    return local_extractive_answer(vector, sources, embedder, ExtractiveParams(**params), question=question)


def test_each_row_of_a_pdf_table_is_a_unit_of_its_own(nics):
    rows = [u for u in units(nics) if u.startswith(("Texas ", "Alabama ", "Wyoming "))]
    assert [r.split()[0] for r in rows] == ["Alabama", "Texas", "Wyoming"]
    assert all("\n" not in r and is_table_row(r) for r in rows)
    assert table_header(nics, nics.index("Texas ")).startswith("State / Territory Permit")


def test_a_chunk_never_cuts_a_row_in_two(nics):
    chunks = [set(c.text.splitlines()) for c in chunk_text(nics, size=800, overlap=120)]
    rows = [line for line in nics.splitlines() if is_table_row(line)]
    assert len(rows) > 50
    assert all(any(row in lines for lines in chunks) for row in rows)


def test_docx_rows_are_units_headed_by_their_first_row():
    path = DOCS / "docx" / "word_tables.docx"
    text = extract(path.name, path.read_bytes()).text
    assert "Cell 1.0 | Cell 1.1 | Cell 1.2" in units(text)
    assert table_header(text, text.index("Cell 2.0 | Cell 2.1")) == "Header 0.0 | Header 0.1 | Header 0.2"


def test_prose_with_figures_is_not_taken_for_a_table():
    prose = "Dense retrieval reaches 78.4% on NQ, 79.4 on\nTriviaQA and 65.2 on WebQuestions, against 59.1\nfor BM25 in our runs."
    assert len(units(prose)) == 1


def test_the_texas_row_answers_the_texas_question_quoted_verbatim(nics):
    given = answer(TEXAS, [candidate(nics)])
    assert not given.insufficient
    lead = given.claims[0]
    assert lead.quote.startswith("Texas ")
    assert lead.quote in nics
    assert all(not c.quote.startswith(("Oklahoma", "Kansas", "Maine")) for c in given.claims)


def test_a_row_whose_table_heading_is_in_an_earlier_passage_is_read_under_it(nics):
    start = nics.index("Tennessee ")
    tail = nics[start : nics.index("\n", nics.index("Texas ")) + 1]
    header = table_header(nics, nics.index("Texas "))
    given = answer(TEXAS, [candidate(tail, start, table_header=header)])
    assert given.claims[0].quote.startswith("Texas ")


def test_a_figure_question_leads_with_the_sentence_that_holds_a_figure():
    question = "What top-20 retrieval accuracy does dense passage retrieval reach on Natural Questions?"
    text = (
        "Dense passage retrieval is a method for open-domain question answering on Natural Questions. "
        "Dense passage retrieval reaches 78.4% top-20 retrieval accuracy on Natural Questions."
    )
    given = answer(question, [candidate(text)])
    assert [c.quote for c in given.claims] == ["Dense passage retrieval reaches 78.4% top-20 retrieval accuracy on Natural Questions."]


def test_a_figure_question_that_no_passage_answers_says_so():
    question = "What top-20 retrieval accuracy does dense passage retrieval reach on Natural Questions?"
    text = "Dense passage retrieval is a method for open-domain question answering on Natural Questions."
    given = answer(question, [candidate(text)])
    assert given.insufficient
    assert given.claims == ()
    assert "do not state a measured figure" in given.text


@pytest.mark.parametrize(
    ("question", "wanted", "text", "expected"),
    [
        ("How many checks were run in Texas?", NUMBER, "Texas ran 1,234 checks.", True),
        ("How many loaves does the bakery bake?", NUMBER, "The bakery bakes twelve loaves.", True),
        ("How many sections are there?", NUMBER, "3 Method\nWe describe the method.", False),
        ("What top-20 accuracy does DPR reach?", MEASURE, "DPR is evaluated on top-20 accuracy.", False),
        ("What top-20 accuracy does DPR reach?", MEASURE, "DPR reaches 78.4% top-20 accuracy.", True),
        ("What top-20 accuracy does DPR reach?", MEASURE, "3.1 Overview\nOur retriever uses 2 encoders.", False),
        ("What percentage of claims are supported?", MEASURE, "Most claims are supported.", False),
    ],
)
def test_what_a_question_asks_for_and_what_holds_it(question, wanted, text, expected):
    assert asked_for(question) == wanted
    assert holds(text, wanted, question) is expected


def test_questions_that_ask_for_neither_are_answered_by_similarity_alone():
    assert asked_for("Why does the gate refuse?") is None
    assert asked_for("What happens when a quote is not found?") is None


HANDBOOK = (
    "CHAPTER 7 – REPORTS, AUDITS, COMPLIANCE\n"
    "MONTHLY REPORTS\n"
    "The standing trustee must file a monthly report with the United States Trustee.\n"
    "Contents ........................................ 45\n"
    "Budget and Staffing\n"
    "Table 2: trustee compensation by year"
)


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("CHAPTER 7 – REPORTS, AUDITS, COMPLIANCE", True),
        ("MONTHLY REPORTS", True),
        ("3.1 Methods", True),
        ("Budget and Staffing", True),
        ("The standing trustee must file a monthly report.", False),
        ("Table 2: trustee compensation by year", False),
        ("It was completed in 1844", False),
        ("The trustee files reports monthly and audits them yearly with the court", False),
    ],
)
def test_what_reads_as_a_heading(line, heading):
    assert is_heading(line) is heading


def test_a_claim_never_quotes_headings_or_contents_lines_and_stays_a_span_of_its_source():
    passage = candidate(HANDBOOK)
    quotes = [u.quote for u in units_of(passage, 2000)]
    assert "The standing trustee must file a monthly report with the United States Trustee." in quotes
    assert not any("CHAPTER" in q or "MONTHLY REPORTS" in q for q in quotes), "headings are cut from the quote"
    assert not any("....." in q for q in quotes), "a contents line is no claim"
    assert "Budget and Staffing" not in quotes, "nor is a bare heading"
    assert all(q in HANDBOOK for q in quotes), "what is quoted is a contiguous span of the source"
    assert claimable("MONTHLY REPORTS") is None
    assert claimable("Table 2: trustee compensation by year") == "Table 2: trustee compensation by year"


def test_a_tables_heading_row_heads_its_rows_but_is_never_a_claim_itself(nics):
    start = nics.index("State / Territory Permit")
    passage = candidate(nics[start : nics.index("Wyoming ") + 200], start)
    kept = units_of(passage, 2000)
    assert not any(u.quote.startswith("State / Territory Permit") for u in kept)
    texas = next(u for u in kept if u.quote.startswith("Texas "))
    assert texas.row
    assert texas.read.startswith("State / Territory Permit"), "a row is still read under its heading"


SLIDES = (
    "Annual review\n\n"
    "In the year under review the Northgate\n\n"
    "The new tidal barrier at Eastmoor was completed in March and cost 42 million pounds.\n\n"
    "Flood defences\nThree pumping stations\nTwo new sluices"
)


def test_a_claim_never_joins_fragments_across_a_paragraph_or_slide_break_and_is_found_exactly():
    passage = candidate(SLIDES, start=120)
    result = answer("How much did the tidal barrier at Eastmoor cost?", [passage])
    assert not result.insufficient
    first = result.claims[0]
    assert first.quote == "The new tidal barrier at Eastmoor was completed in March and cost 42 million pounds."
    for claim in result.claims:
        assert claim.quote in SLIDES, "a contiguous span of the source"
        assert "\n\n" not in claim.quote, "never across a paragraph break"
        location = locate_quote(claim.quote, SLIDES, 90.0)
        assert (location.status, location.method) == ("located", "exact")


WORD_SAMPLE = DOCS / "docx" / "word_sample.docx"


@pytest.mark.parametrize(
    ("row", "heading", "said"),
    [
        (
            "Berries | Blueberry, Strawberry, Cranberry | 150",
            " | Food | Calories per portion",
            "Berries — Food: Blueberry, Strawberry, Cranberry; Calories per portion: 150",
        ),
        ("Lorem ipsum | A link example", "Header Col 1 | Header Col 2", "Lorem ipsum — Header Col 2: A link example"),
        # A PDF heading line that spaces its columns apart: "Long Gun" is one heading.
        ("Texas 21,550 56,941 51,670", "State  Permit  Handgun  Long Gun", "Texas — Permit: 21,550; Handgun: 56,941; Long Gun: 51,670"),
        ("Texas 21,550 56,941 51,670", "Permit\tHandgun\tLong Gun", "Texas — Permit: 21,550; Handgun: 56,941; Long Gun: 51,670"),
        # Single-spaced heading words cannot be matched to cells: "Long Gun" would be two headings.
        ("Texas 21,550 56,941 51,670 2,532", "State Permit Handgun Long Gun", "Texas 21,550 56,941 51,670 2,532"),
        # A merged cell leaves fewer cells than headings: the row is said as it stands.
        (
            "Cell 1.0 | Merged Cell 1.1 1.2 | Cell 1.3",
            "Header 0.0 | Header 0.1 | Header 0.2 | Header 0.3",
            "Cell 1.0 | Merged Cell 1.1 1.2 | Cell 1.3",
        ),
        ("Cell 1.0 | Cell 1.1", None, "Cell 1.0 | Cell 1.1"),
        # A row of figures with no label of its own.
        ("2015 100 20", "Year  Sales  Profit", "2015 100 20"),
    ],
)
def test_a_row_is_said_under_its_column_headings_only_where_each_heading_matches_its_cell(row, heading, said):
    assert row_statement(row, heading) == said


def test_a_claim_quoting_a_row_says_it_under_its_headings_and_quotes_the_row_verbatim():
    text = extract(WORD_SAMPLE.name, WORD_SAMPLE.read_bytes()).text
    given = answer("In the duck food table, how many calories does a portion of berries have?", [candidate(text)])
    lead = given.claims[0]
    assert lead.quote == "Berries | Blueberry, Strawberry, Cranberry | 150"
    assert lead.text == "Berries — Food: Blueberry, Strawberry, Cranberry; Calories per portion: 150"
    assert locate_quote(lead.quote, text, 90.0).method == "exact"


def test_a_question_naming_rows_in_another_number_than_the_table_still_finds_them():
    text = extract(WORD_SAMPLE.name, WORD_SAMPLE.read_bytes()).text
    given = answer("Which grains are listed as food for a duck?", [candidate(text)])
    assert "Grain | Corn, Buckwheat, Barley | 200" in [c.quote for c in given.claims]


def test_a_question_naming_a_column_heading_finds_the_rows_under_it():
    text = "Simple uniform table\n\nHeader Col 1 | Header Col 2\nLorem ipsum | A link example\n\nThe table above is a simple one."
    # Every unit similar enough is said: what is tested is which rows are read at all.
    given = answer(
        "In the simple uniform table, what is written under Header Col 2?", [candidate(text)], relative_to_best=0.0, min_similarity=0.0
    )
    said = {c.quote: c.text for c in given.claims}
    assert said.get("Lorem ipsum | A link example") == "Lorem ipsum — Header Col 2: A link example"
