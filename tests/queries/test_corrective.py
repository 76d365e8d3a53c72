"""Corrective RAG: each branch, with web search through the real Tavily client and a fake server."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import IntegrityError, transaction

from apps.audits.models import AuditRecord
from apps.documents import services
from apps.pipeline.corrective import AMBIGUOUS, CORRECT, INCORRECT, CorrectiveParams, classify, keyword_rewrite, refine
from apps.pipeline.embedding import get_embedder
from apps.pipeline.rerank import Scored
from apps.pipeline.text import sentence_spans
from apps.pipeline.types import Candidate
from apps.queries.services import query_answer
from apps.workspaces.models import WorkspaceSettings
from tests.fake_services import FakeTavily, running

BAKERY = (
    "The Rye Street bakery opens at six in the morning. Its sourdough starter is fed twice a day with whole rye flour. "
    "The owner, Mara Lind, trained in Copenhagen. On Sundays the bakery sells cardamom buns until they run out."
)
TRITON = {
    "url": "https://example.org/triton",
    "title": "Triton (moon)",
    "content": "Triton orbits Neptune in a retrograde orbit with a period of about 5.9 days. It is Neptune's largest moon.",
}


def test_classification_follows_the_upper_and_lower_thresholds():
    params = CorrectiveParams(upper=0.6, lower=0.3)
    assert classify([0.2, 0.65], params) == CORRECT
    assert classify([0.2, 0.45], params) == AMBIGUOUS
    assert classify([0.2, 0.1], params) == INCORRECT
    assert classify([], params) == INCORRECT


def test_refinement_strips_a_passage_to_its_relevant_sentences_or_keeps_it_whole():
    embedder = get_embedder()
    question = "When does the bakery open?"
    passage = Candidate("c1", "d1", "bakery", 0, BAKERY, 0, len(BAKERY), None, None, None, None, 0.0)
    vector = embedder.embed([question])[0]
    (stripped,) = refine([Scored(passage, 0.7)], vector, embedder, CorrectiveParams(strip_threshold=0.45))
    assert stripped.text.startswith("The Rye Street bakery opens at six in the morning.")
    assert "Copenhagen" not in stripped.text
    sentences = [BAKERY[x.start : x.end] for x in sentence_spans(BAKERY)]
    kept = [stripped.text[x.start : x.end] for x in sentence_spans(stripped.text)]
    assert kept == [sentence for sentence in sentences if sentence in kept], "whole sentences of the passage, in order"
    assert stripped.kept_sentences < stripped.total_sentences == 4
    assert not stripped.whole_chunk
    (whole,) = refine([Scored(passage, 0.7)], np.zeros(384, dtype=np.float32), embedder, CorrectiveParams(strip_threshold=0.45))
    assert whole.text == BAKERY
    assert whole.whole_chunk


def test_keyword_rewrite_keeps_the_content_words():
    assert keyword_rewrite("What is the orbital period of Neptune's moon Triton?") == "orbital period Neptune's moon Triton"


def test_the_database_refuses_a_lower_threshold_above_the_upper(personas):
    options = WorkspaceSettings.objects.get(workspace=personas.workspace_a)
    options.crag_lower, options.crag_upper = 0.7, 0.5
    with pytest.raises(IntegrityError), transaction.atomic():
        options.save()


@pytest.fixture
def bakery(personas):
    document, _ = services.document_create(
        workspace=personas.workspace_a, actor=None, filename="bakery.txt", data=BAKERY.encode(), enqueue=False
    )
    services.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    WorkspaceSettings.objects.filter(workspace=personas.workspace_a).update(web_search_enabled=True, strip_threshold=0.45)


@pytest.fixture
def tavily(settings):
    fake = FakeTavily()
    with running(fake) as url:
        settings.TAVILY_API_KEY, settings.TAVILY_BASE_URL, settings.WEB_SEARCH_TIMEOUT_S = "tvly-test-key", url, 1.0
        yield fake


def ask(personas, question: str):
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=question)
    return run, AuditRecord.objects.get(query_run_id=run.pk).payload["corrective"]


def test_correct_retrieval_answers_from_the_refined_passage_without_the_web(personas, bakery, tavily):
    run, trace = ask(personas, "When does the Rye Street bakery open?")
    assert trace["verdict"] == CORRECT
    assert "web" not in trace
    assert tavily.requests == []
    assert run.answer == "The Rye Street bakery opens at six in the morning."
    assert trace["refined"][0]["whole_chunk"] is False
    claim = run.claims[0]
    assert claim["quote_status"] == "located"
    assert BAKERY[claim["start"] : claim["end"]] == claim["quote"], "offsets point into the whole passage"


def test_incorrect_retrieval_asks_the_web_with_a_rewritten_query_and_answers_from_it(personas, bakery, tavily):
    tavily.results = [TRITON]
    run, trace = ask(personas, "What is the orbital period of Neptune's moon Triton?")
    assert trace["verdict"] == INCORRECT
    assert trace["kept"] == []
    assert tavily.requests[0]["path"] == "/search"
    assert tavily.requests[0]["body"]["query"] == "orbital period Neptune's moon Triton"
    assert tavily.requests[0]["authorization"] == "Bearer tvly-test-key"
    assert trace["web"]["results"][0]["url"] == TRITON["url"]
    assert not run.insufficient
    assert "5.9 days" in run.answer
    assert run.sources[0]["url"] == TRITON["url"]
    assert run.claims[0]["quote_status"] == "located"


@pytest.mark.parametrize(("mode", "error"), [("429", "UsageLimitExceededError"), ("500", "HTTPError"), ("slow", "TimeoutError")])
def test_a_failing_web_search_is_recorded_and_the_question_is_refused(personas, bakery, tavily, mode, error):
    tavily.mode, tavily.delay_s, tavily.results = mode, 3.0, [TRITON]
    run, trace = ask(personas, "What is the orbital period of Neptune's moon Triton?")
    assert trace["web"]["searched"] is True
    assert trace["web"]["error"].startswith(error)
    assert "tvly-test-key" not in trace["web"]["error"]
    assert run.insufficient
    assert run.provider == "gate"
    assert run.gate["reason"].endswith("and the web added nothing")


def test_web_search_stays_off_unless_the_workspace_enables_it(personas, bakery, tavily):
    WorkspaceSettings.objects.filter(workspace=personas.workspace_a).update(web_search_enabled=False)
    run, trace = ask(personas, "What is the orbital period of Neptune's moon Triton?")
    assert trace["web"] == {"searched": False, "reason": "web search is off for this workspace"}
    assert tavily.requests == []
    assert run.insufficient


def test_web_search_needs_a_key(personas, bakery, tavily, settings):
    settings.TAVILY_API_KEY = ""
    _, trace = ask(personas, "What is the orbital period of Neptune's moon Triton?")
    assert trace["web"]["reason"] == "no TAVILY_API_KEY is configured"
    assert tavily.requests == []


def test_naive_mode_skips_correction(personas, bakery, tavily):
    run = query_answer(
        workspace=personas.workspace_a,
        actor=personas.member,
        question="What is the orbital period of Neptune's moon Triton?",
        mode="naive",
    )
    assert AuditRecord.objects.get(query_run_id=run.pk).payload["corrective"] == {"applied": False}
    assert tavily.requests == []
    assert run.provider == "local", "the generator ran on whatever was retrieved; it did not meet the gate"
    assert run.gate["enabled"] is False


def test_with_a_provider_configured_the_web_query_is_the_llms_rewrite(personas, bakery, tavily, fake_llm):
    fake_llm.script("groq", {"content": '{"query": "Triton moon orbital period"}'})
    fake_llm.script("zhipuai", {"status": 500})
    tavily.results = [TRITON]
    run, trace = ask(personas, "What is the orbital period of Neptune's moon Triton?")
    assert tavily.requests[0]["body"]["query"] == "Triton moon orbital period"
    assert trace["web"]["rewrite"]["by"] == "groq"
    rewrite_call = fake_llm.calls("groq")[0]["body"]
    assert rewrite_call["messages"][-1]["content"] == "What is the orbital period of Neptune's moon Triton?"
    assert "5.9 days" in run.answer


def test_a_failed_llm_rewrite_falls_back_to_the_content_words(personas, bakery, tavily, fake_llm):
    fake_llm.script("groq", {"content": "not json at all"})
    fake_llm.script("zhipuai", {"status": 429})
    tavily.results = [TRITON]
    _run, trace = ask(personas, "What is the orbital period of Neptune's moon Triton?")
    assert tavily.requests[0]["body"]["query"] == "orbital period Neptune's moon Triton"
    assert trace["web"]["rewrite"]["by"] == "local keywords"
    assert [(a["provider"], a["outcome"]) for a in trace["web"]["rewrite"]["attempts"]] == [("groq", "failed"), ("zhipuai", "failed")]
