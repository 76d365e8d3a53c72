"""The confidence gate: verified mode refuses weak evidence without generating; naive mode answers."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.audits.models import AuditRecord
from apps.documents import services
from apps.pipeline.gate import REFUSAL, confidence_gate, unmatched_terms
from apps.queries.models import QueryRun
from apps.queries.services import query_answer

BAKERY = "The Rye Street bakery opens at six in the morning. Its sourdough starter is fed twice a day with whole rye flour."
OFF_TOPIC = "What is the orbital period of Neptune's moon Triton?"


@pytest.fixture
def bakery(personas):
    document, _ = services.document_create(
        workspace=personas.workspace_a, actor=None, filename="bakery.txt", data=BAKERY.encode(), enqueue=False
    )
    services.document_ingest(workspace=personas.workspace_a, document_id=document.pk)


def test_gate_decisions():
    assert confidence_gate([0.2, 0.5], threshold=0.4, enabled=True).passed
    refused = confidence_gate([0.2, 0.3], threshold=0.4, enabled=True)
    assert not refused.passed
    assert refused.top_score == 0.3
    assert "below the threshold 0.400" in refused.reason
    assert not confidence_gate([], threshold=0.4, enabled=True).passed
    assert confidence_gate([0.0], threshold=0.4, enabled=False).passed
    unanswerable = confidence_gate([0.8], threshold=0.4, enabled=True, answerability=0.1)
    assert not unanswerable.passed
    assert unanswerable.top_score == 0.1
    assert unanswerable.reason == "answerability 0.100 is below the threshold 0.400 (relevance 0.800, answerability 0.100)"
    both = confidence_gate([0.8], threshold=0.4, enabled=True, answerability=0.6)
    assert both.passed
    assert both.top_score == 0.6
    assert both.relevance == 0.8


def test_verified_mode_refuses_an_off_topic_question_without_generating(personas, bakery):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=OFF_TOPIC)
    assert run.answer == REFUSAL
    assert run.insufficient
    assert run.provider == "gate"
    assert run.claims == []
    assert run.gate["passed"] is False
    payload = AuditRecord.objects.get(query_run_id=run.pk).payload
    best = max(s["score"] for s in payload["rerank"]["scores"])
    assert payload["corrective"]["verdict"] == "incorrect"
    assert payload["gate"]["reason"].startswith(f"retrieval was incorrect: the best relevance {best:.3f} is below the lower threshold")
    assert payload["provider_attempts"] == []
    assert "generate" not in payload["timings_ms"]


def test_naive_mode_skips_the_gate(personas, bakery):
    run = query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="When does the bakery on Rye Street open?", mode="naive"
    )
    assert run.gate["enabled"] is False
    assert run.provider == "local"
    assert "six in the morning" in run.answer


def test_an_answerable_question_passes_the_gate(personas, bakery):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question="When does the bakery on Rye Street open?")
    assert run.gate["passed"] is True
    assert "six in the morning" in run.answer


def test_api_takes_a_threshold_override_and_enable_gating(personas, bakery):
    client = personas.client("member")
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    question = {"question": "When does the bakery on Rye Street open?"}
    strict = client.post(url, question | {"threshold_override": 1.0}, content_type="application/json").json()
    assert strict["insufficient"] is True
    assert strict["gate"]["threshold"] == 1.0
    assert strict["gate"]["top_score"] == min(strict["gate"]["relevance"], strict["gate"]["answerability"])
    naive = client.post(url, question | {"threshold_override": 1.0, "enable_gating": False}, content_type="application/json").json()
    assert naive["mode"] == "naive"
    assert naive["insufficient"] is False


@pytest.mark.parametrize("bad", [1.5, -0.1, "high"])
def test_api_refuses_a_threshold_override_out_of_range(personas, bad):
    response = personas.client("member").post(
        reverse("api_queries", args=[personas.workspace_a.pk]),
        {"question": "Anything?", "threshold_override": bad},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "threshold_override" in response.json()["error"]["details"]
    assert not QueryRun.objects.exists()


def test_the_answer_page_says_why_it_refused(personas, bakery):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=OFF_TOPIC)
    page = personas.client("viewer").get(reverse("answer", args=["acme", run.pk])).content.decode()
    assert "Refused by the corrective step: no passage was relevant enough to keep" in page
    assert "is below the lower threshold" in page
    assert "against the lower corrective threshold" in page


def test_a_relevant_passage_that_does_not_answer_is_refused_on_answerability(personas, bakery):
    """The passage is about the right bakery, and relevant, but says nothing of who owns it: the
    local judge reads that it does not answer, so the gate refuses on answerability. (A question
    about the bakery on Elm Street is refused before any score: the passage names Rye Street.
    The judge's known miss — it reads the opening hours as answering what bread costs — is in its
    model card.)"""
    asked = {"workspace": personas.workspace_a, "actor": personas.member, "threshold_override": 0.5}
    answered = query_answer(**asked, question="When does the bakery on Rye Street open?")
    assert answered.gate["passed"] is True
    assert answered.gate["answerability"] >= 0.5
    assert answered.gate["relevance"] >= 0.5
    assert answered.gate["top_score"] == min(answered.gate["answerability"], answered.gate["relevance"])

    refused = query_answer(**asked, question="Who owns the Rye Street bakery?")
    gate = refused.gate
    assert refused.answer == REFUSAL
    assert refused.provider == "gate"
    assert gate["relevance"] >= 0.5 > gate["answerability"]
    assert gate["top_score"] == gate["answerability"]
    assert gate["reason"].startswith(f"answerability {gate['answerability']:.3f} is below the threshold 0.500")
    payload = AuditRecord.objects.get(query_run_id=refused.pk).payload
    assert payload["gate"]["answerability"] == gate["answerability"]
    assert "answerability" in payload["timings_ms"]


def test_naive_mode_does_not_judge_answerability(personas, bakery):
    run = query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="When does the bakery on Elm Street open?", mode="naive"
    )
    assert run.gate["answerability"] is None
    assert run.insufficient is False


@pytest.mark.parametrize(
    ("question", "passage", "unmatched"),
    [
        # a year, a name and a negation the passage does not have
        ("Who besieged Bari in 1071?", "Robert Guiscard took Bari in 1068 after a long siege.", ("1071",)),
        ("Who led Isaac's troops to Cyprus?", "Richard the Lionheart reached Cyprus with his fleet.", ("Isaac's",)),
        ("What is not decidable?", "The halting problem is undecidable in general.", ("not",)),
        # inflection, accents, a misspelt letter, a surname for a full name, an acronym spelt out
        ("What part of France were the Normans located in?", "The Norman settlers held the north of France.", ()),
        ("When did Herve serve as a general?", "Hervé served as a Byzantine general in the 1050s.", ()),
        ("When was Hartmanis's paper received?", "The paper of Hatmanis and Stearns was well received.", ()),
        ("What device is attributed to Alan Turing?", "The Turing machine was described in 1936.", ()),
        # a title before a name the passage gives in full, or gives another name after it
        ("What did Professor Turing design?", "Alan Turing designed the Automatic Computing Engine.", ()),
        ("Where did Dr. Snow map the outbreak?", "John Snow mapped the cholera outbreak in Soho.", ()),
        ("What did Professor Hopper design?", "Alan Turing designed the Automatic Computing Engine.", ("Professor Hopper",)),
        ("When did Queen Anne rule?", "Queen Victoria ruled from 1837.", ("Queen Anne",)),
        ("What did Prince record in 1984?", "Madonna recorded an album in 1984.", ("Prince",)),
        ("How many days of PTO do staff get?", "Staff get 25 days of paid time off a year.", ()),
        # spelled quantities ask for a count and name no number; one-letter variables are no names
        ("What are two examples of a reduction?", "Karp reductions and Cook reductions are common.", ()),
        ("What links problem X and problem C?", "A reduction links problem X to problem Y.", ()),
        ("Which drugs were not approved?", "Two drugs were never approved by the agency.", ()),
        # a word put where the passage has its opposite; a question naming both asks which
        ("What happens if a problem is soft for C?", "A problem is hard for C if every problem in C reduces to it.", ("soft",)),
        ("What has a lot to do with physical computing?", "It has very little to do with physical computing.", ("lot",)),
        ("What is the output of an unlimited search?", "A search with limited resources outputs a list.", ("unlimited",)),
        ("What is the second level of the hierarchy?", "The hierarchy collapses to its first level.", ("second",)),
        ("Is the output simple or complex?", "The output is more complex than yes or no.", ()),
        ("What is unknown about L and P?", "It is not known whether L equals P.", ()),
        ("Who was Emma's brother?", "Emma, sister of Duke Richard, married Ethelred.", ()),
        # a swapped first word of a name, a regnal number, a list of names
        (
            "Who proposed the Alpha Prize Problems?",
            "The Millennium Prize Problems were proposed by the Clay Institute.",
            ("Alpha Prize Problems",),
        ),
        ("What title did Henry II take?", "Bethencourt was vassal to Henry III of Castile; Richard II ruled.", ("Henry II",)),
        ("What did Richard II found?", "Richard II founded an abbey.", ()),
        ("Where are RPP, BPP and BQP?", "BPP and BQP lie between P and PSPACE.", ("RPP",)),
    ],
)
def test_unmatched_terms(question, passage, unmatched):
    assert unmatched_terms(question, passage) == unmatched


def test_names_and_numbers_may_be_in_any_passage_and_a_negation_must_be_in_the_best():
    best, other = "The Texas row gives 146,982 checks.", "Totals are not adjusted for permits in Ohio."
    assert unmatched_terms("How many checks were run in Ohio in 2015?", best, [other]) == ("2015",)
    assert unmatched_terms("Which totals are not adjusted?", best, [other]) == ("not",)
    assert unmatched_terms("Which totals are not adjusted?", other, [best]) == ()


def test_an_opposite_is_read_near_the_best_sentence_and_only_counts_if_the_best_passage_lacks_the_word():
    best = "Checks rose in Texas. Totals are adjusted. Checks fell in Ohio in winter and rose in spring."
    assert unmatched_terms("Where did checks fall?", best, near="Checks rose in Texas.") == ()  # "fell" is in the passage
    assert unmatched_terms("Where were totals lower?", best, near="Totals are adjusted.") == ()
    assert unmatched_terms("Where were totals lower?", "Totals were higher in Texas.") == ("lower",)


def test_the_gate_refuses_what_the_best_passage_does_not_mention_whatever_the_scores():
    refused = confidence_gate([0.9], threshold=0.26, enabled=True, answerability=0.8, unmatched=("1071",))
    assert not refused.passed
    assert refused.top_score == 0.0
    assert refused.unmatched == ("1071",)
    assert refused.reason == "the passages do not mention the question's '1071' (relevance 0.900, answerability 0.800)"
    assert confidence_gate([0.9], threshold=0.26, enabled=False, unmatched=("1071",)).passed  # naive mode has no gate


def test_verified_mode_refuses_a_question_naming_a_year_the_documents_do_not_mention(personas, bakery):
    question = "When did the Rye Street bakery open in 1987?"
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=question)
    assert run.insufficient
    assert run.provider == "gate"
    run.refresh_from_db()
    assert run.gate["unmatched"] == ["1987"]
    payload = AuditRecord.objects.get(query_run_id=run.pk).payload
    assert payload["gate"]["reason"].startswith("the passages do not mention the question's '1987'")
    assert "generate" not in payload["timings_ms"]
    naive = query_answer(workspace=personas.workspace_a, actor=personas.member, question=question, mode="naive")
    assert not naive.insufficient


def test_a_question_naming_a_document_by_its_file_name_is_not_refused_for_that_name(personas):
    document, _ = services.document_create(
        workspace=personas.workspace_a, actor=None, filename="Harbourside_guide.txt", data=BAKERY.encode(), enqueue=False
    )
    services.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    named = query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="In the Harbourside guide, when does the Rye Street bakery open?"
    )
    assert "Harbourside" not in named.gate.get("unmatched", [])
    assert not named.insufficient
    assert "six in the morning" in named.answer
    # A name neither the passages nor their documents' names mention is still refused.
    other = query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="In the Lakeside guide, when does the Rye Street bakery open?"
    )
    assert other.insufficient
    assert list(other.gate["unmatched"]) == ["Lakeside"]
