"""Generation through the provider router: the real `groq` and `zhipuai` clients against a fake
OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
import logging
import time

import numpy as np
import pytest
from django.urls import reverse

from apps.audits.models import AuditEvent, AuditRecord
from apps.core.crypto import decrypt
from apps.documents import services as documents
from apps.pipeline.prompting import UnusableOutput, parse_answer, partial_answer
from apps.pipeline.providers import ChatProvider, GenerationRequest, ProviderSpec, Router
from apps.pipeline.types import Candidate
from apps.queries.services import query_answer
from apps.workspaces.models import WorkspaceSettings
from tests.fake_services import answer_json

LIGHTHOUSE = (
    "Skerryvore is a lighthouse on a reef off the west coast of Scotland. It was built between 1838 and 1844 "
    "by Alan Stevenson. The tower is 48 metres tall, the tallest lighthouse in Scotland. "
    "The light was automated in 1972 and is now monitored from Edinburgh."
)
TALL = "The tower is 48 metres tall, the tallest lighthouse in Scotland."
BUILT = "It was built between 1838 and 1844 by Alan Stevenson."
GOOD = answer_json(("Skerryvore's tower is 48 metres tall.", 1, TALL))
SECRET = "gsk_servergroqkey0001"


@pytest.fixture
def lighthouse(personas):
    document, _ = documents.document_create(
        workspace=personas.workspace_a, actor=None, filename="skerryvore.txt", data=LIGHTHOUSE.encode(), enqueue=False
    )
    documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    return document


def ask(personas, question="How tall is the Skerryvore lighthouse?", **kwargs):
    return query_answer(workspace=personas.workspace_a, actor=personas.member, question=question, **kwargs)


def generation_calls(fake_llm, provider: str) -> list[dict]:
    """The provider's calls for the answer itself (judge calls come after them)."""
    return [c for c in fake_llm.calls(provider) if c["body"]["messages"][0]["content"].startswith("You answer questions")]


def outcomes(run) -> list[tuple[str, str]]:
    return [(a["provider"], a["outcome"]) for a in run.attempts if a["purpose"] == "generate"]


def test_groq_answers_with_claims_whose_quotes_are_located_in_the_source(personas, lighthouse, fake_llm):
    fake_llm.script("groq", {"content": GOOD})
    run = ask(personas)
    assert outcomes(run) == [("groq", "ok")]
    assert run.provider == "groq"
    assert run.answer == "Skerryvore's tower is 48 metres tall."
    (claim,) = run.claims
    assert claim["quote_status"] == "located"
    assert LIGHTHOUSE[claim["start"] : claim["end"]] == TALL
    (call,) = generation_calls(fake_llm, "groq")
    assert call["path"] == "/groq/openai/v1/chat/completions"
    assert call["authorization"] == f"Bearer {SECRET}"
    assert call["body"]["response_format"] == {"type": "json_object"}
    assert call["body"]["model"] == "llama-3.1-8b-instant"
    prompt = call["body"]["messages"][-1]["content"]
    assert "[1] skerryvore" in prompt, "the prompt numbers the sources"
    assert "verbatim" in call["body"]["messages"][0]["content"]


def test_a_rate_limited_groq_falls_back_to_zhipuai(personas, lighthouse, fake_llm):
    fake_llm.script("groq", {"status": 429, "error": "rate limit reached"})
    fake_llm.script("zhipuai", {"content": GOOD})
    run = ask(personas)
    assert outcomes(run) == [("groq", "failed"), ("zhipuai", "ok")]
    assert run.attempts[0]["error_class"] == "RateLimitError"
    assert "429" in run.attempts[0]["message"]
    assert fake_llm.calls("zhipuai")[0]["path"] == "/zhipu/chat/completions"
    assert fake_llm.calls("zhipuai")[0]["body"]["model"] == "glm-4-flash"
    assert len(generation_calls(fake_llm, "groq")) == 1, "the client's own retries are off"
    assert run.provider == "zhipuai"
    assert run.claims[0]["quote_status"] == "located"


def test_when_both_providers_fail_the_local_provider_answers(personas, lighthouse, fake_llm):
    fake_llm.script("groq", {"status": 500, "error": "boom"})
    fake_llm.script("zhipuai", {"status": 503, "error": "overloaded"})
    run = ask(personas)
    assert outcomes(run) == [("groq", "failed"), ("zhipuai", "failed"), ("local", "ok")]
    assert [a["error_class"] for a in run.attempts[:2]] == ["InternalServerError", "APIServerFlowExceedError"]
    assert run.provider == "local"
    assert any("48 metres" in c["quote"] for c in run.claims)


def test_a_groq_timeout_hands_over_to_zhipuai_within_the_timeout_plus_one_second(personas, lighthouse, fake_llm, settings):
    settings.LLM_TIMEOUT_S = 1.0
    fake_llm.script("groq", {"content": GOOD, "delay": 4})
    fake_llm.script("zhipuai", {"content": GOOD})
    started = time.monotonic()
    run = ask(personas)
    assert outcomes(run) == [("groq", "failed"), ("zhipuai", "ok")]
    assert run.attempts[0]["error_class"] == "APITimeoutError"
    zhipu_done = run.attempts[0]["ms"] + run.attempts[1]["ms"]
    assert zhipu_done < (1.0 + 1.0) * 1000
    assert time.monotonic() - started < 4, "the slow reply was not waited for"


def test_a_stream_that_trickles_past_the_timeout_is_abandoned(personas, lighthouse, fake_llm, settings):
    settings.LLM_TIMEOUT_S = 1.0
    fake_llm.script("groq", {"content": GOOD, "chunk_delay": 0.3})
    fake_llm.script("zhipuai", {"content": GOOD})
    run = ask(personas)
    assert outcomes(run) == [("groq", "failed"), ("zhipuai", "ok")]
    assert run.attempts[0]["error_class"] == "Timeout"


def test_invalid_json_gets_one_repair_attempt_then_the_next_provider(personas, lighthouse, fake_llm):
    fake_llm.script("groq", {"content": "Sure! The tower is tall."}, {"content": "{not json"})
    fake_llm.script("zhipuai", {"content": "```json\n" + GOOD + "\n```"})
    run = ask(personas)
    assert outcomes(run) == [("groq", "failed"), ("zhipuai", "ok")]
    assert run.attempts[0]["error_class"] == "UnusableOutput"
    assert run.attempts[0]["repaired"] is True
    _first, repair = generation_calls(fake_llm, "groq")
    assert repair["body"]["messages"][-2] == {"role": "assistant", "content": "Sure! The tower is tall."}
    assert "could not be read" in repair["body"]["messages"][-1]["content"]
    assert run.provider == "zhipuai", "code fences around the JSON are tolerated"


def test_a_successful_repair_keeps_the_provider(personas, lighthouse, fake_llm):
    fake_llm.script("groq", {"content": '{"answer": "tall"}'}, {"content": GOOD})
    run = ask(personas)
    assert outcomes(run) == [("groq", "ok")]
    assert run.attempts[0]["repaired"] is True


def test_a_quote_that_is_not_in_its_source_is_flagged_end_to_end(personas, lighthouse, fake_llm):
    invented = "The tower is 61 metres tall and was painted red in 1901."
    fake_llm.script(
        "groq", {"content": answer_json(("The tower is 61 metres tall.", 1, invented), ("It was built by Alan Stevenson.", 1, BUILT))}
    )
    run = ask(personas)
    fabricated, real = run.claims
    assert fabricated["quote_status"] == "hallucinated_quote"
    assert fabricated["verdict"] == "hallucinated_quote"
    assert fabricated["faithful"] is False
    assert real["quote_status"] == "located"
    assert run.risk != "low", "an answer with a fabricated quote is never Low risk"
    record = AuditRecord.objects.get(query_run_id=run.pk)
    assert record.payload["stages"]["verify"]["claims"][0]["verdict"] == "hallucinated_quote"


def test_a_provider_saying_insufficient_is_an_honest_refusal(personas, lighthouse, fake_llm):
    fake_llm.script("groq", {"content": answer_json(answer="The sources do not say.", insufficient=True)})
    run = ask(personas)
    assert run.insufficient
    assert run.claims == []
    assert run.provider == "groq"


def test_no_key_appears_in_attempts_audit_api_pages_or_logs(personas, lighthouse, fake_llm, caplog):
    caplog.set_level(logging.DEBUG)
    fake_llm.script("groq", {"status": 401, "error": f"Invalid API Key {SECRET}"})
    fake_llm.script("zhipuai", {"status": 401, "error": "Authorization: Bearer zhipu-server-key.0002 is not valid"})
    url = reverse("api_queries", args=[personas.workspace_a.pk])
    response = personas.client("member").post(url, {"question": "How tall is the Skerryvore lighthouse?"}, content_type="application/json")
    assert response.status_code == 201
    body = response.json()
    assert [(a["provider"], a["outcome"], a["error_class"]) for a in body["attempts"] if a["purpose"] == "generate"] == [
        ("groq", "failed", "AuthenticationError"),
        ("zhipuai", "failed", "APIAuthenticationError"),
        ("local", "ok", ""),
    ]
    record = AuditRecord.objects.get(query_run_id=body["id"])
    page = personas.client("member").get(reverse("answer", args=["acme", body["id"]])).content.decode()
    for text in (json.dumps(body), json.dumps(record.payload), page, caplog.text):
        assert SECRET not in text
        assert "zhipu-server-key.0002" not in text
    assert "[redacted]" in body["attempts"][0]["message"]


def test_the_workspace_order_and_its_own_encrypted_key_are_used(personas, lighthouse, fake_llm):
    personas.client("admin").post(
        reverse("providers", args=["acme"]), {"provider_order": "zhipuai, groq", "groq_api_key": "gsk_workspaceown0003"}
    )
    fake_llm.script("zhipuai", {"status": 500})
    fake_llm.script("groq", {"content": GOOD})
    run = ask(personas)
    assert outcomes(run) == [("zhipuai", "failed"), ("groq", "ok")]
    assert fake_llm.calls("groq")[0]["authorization"] == "Bearer gsk_workspaceown0003"
    assert fake_llm.calls("zhipuai")[0]["authorization"] == "Bearer zhipu-server-key.0002", "falls back to the server's key"
    assert [a["key_source"] for a in run.attempts if a["purpose"] == "generate"] == ["server", "workspace"]
    stored = WorkspaceSettings.objects.get(workspace=personas.workspace_a)
    assert "gsk_workspaceown0003" not in stored.groq_api_key_encrypted
    assert decrypt(stored.groq_api_key_encrypted) == "gsk_workspaceown0003"


def test_a_provider_with_no_key_at_all_is_skipped(personas, lighthouse, fake_llm, settings):
    settings.GROQ_API_KEY = ""
    WorkspaceSettings.objects.filter(workspace=personas.workspace_a).update(provider_order="groq")
    run = ask(personas)
    assert outcomes(run) == [("groq", "skipped"), ("local", "ok")]
    assert fake_llm.calls("groq") == []


def test_the_server_default_order_is_every_provider_with_a_key(personas, lighthouse, fake_llm, settings):
    settings.GROQ_API_KEY = ""
    fake_llm.script("zhipuai", {"content": GOOD})
    run = ask(personas)
    assert outcomes(run) == [("zhipuai", "ok")]


def test_the_providers_page_never_shows_a_saved_key_and_audits_the_change(personas, fake_llm):
    url = reverse("providers", args=["acme"])
    response = personas.client("owner").post(url, {"provider_order": "zhipuai, groq", "zhipuai_api_key": "zhipu-own-key.9999"})
    assert response.status_code == 302
    page = personas.client("owner").get(url).content.decode()
    assert "zhipu-own-key.9999" not in page
    assert "this workspace's own key" in page
    event = AuditEvent.objects.get(workspace=personas.workspace_a, action="settings.providers")
    assert event.data == {"provider_order": {"from": "server default", "to": "zhipuai,groq"}, "keys": {"zhipuai": "set"}}
    assert "zhipu-own-key" not in json.dumps(event.data)


def test_bad_provider_orders_are_refused_with_a_message(personas):
    url = reverse("providers", args=["acme"])
    for order, message in [("openai", "Unknown provider"), ("groq, groq", "once"), ("local, groq", "always comes last")]:
        response = personas.client("admin").post(url, {"provider_order": order})
        assert response.status_code == 400
        assert message in response.content.decode()


def test_the_providers_page_is_for_admins_and_owners_only(personas):
    url = reverse("providers", args=["acme"])
    for who in ("member", "viewer"):
        assert personas.client(who).get(url).status_code == 403
        assert personas.client(who).post(url, {"provider_order": "groq"}).status_code == 403
    assert personas.client("admin").get(url).status_code == 200
    assert personas.client("owner_b").get(url).status_code == 404


def test_the_parser_tolerates_prose_fences_and_loose_source_numbers():
    reply = (
        'Here you go:\n```json\n{"answer": "A.", "claims": [{"text": "A.", "source": "[2]", "quote": "A."}], "insufficient": false}\n```'
    )
    answer = parse_answer(reply, max_claims=3, provider="groq")
    assert answer.claims[0].source == 2
    with pytest.raises(UnusableOutput, match="no claims"):
        parse_answer('{"answer": "x", "claims": [], "insufficient": false}', max_claims=3, provider="groq")
    with pytest.raises(UnusableOutput, match="lacks"):
        parse_answer('{"answer": "x", "claims": [{"text": "x"}], "insufficient": false}', max_claims=3, provider="groq")
    assert partial_answer('{"answer": "The tower is \\"tall') == 'The tower is "tall'


def test_the_router_streams_the_answer_text_as_it_arrives(fake_llm, settings):
    fake_llm.script("groq", {"content": GOOD})
    seen: list[str] = []
    source = Candidate("c", "d", "skerryvore", 0, LIGHTHOUSE, 0, len(LIGHTHOUSE), None, None, None, None, 0.0)
    spec = ProviderSpec("groq", "llama-3.1-8b-instant", SECRET, settings.GROQ_BASE_URL, "server")
    request = GenerationRequest("How tall?", np.zeros(384, dtype=np.float32), [source], 3)
    answer, attempts = Router([ChatProvider(spec, timeout_s=2)], secrets=[SECRET]).generate(request, seen.append)
    assert attempts[0].outcome == "ok"
    growing = [s for s in seen if s]
    assert len(growing) > 2
    assert all(a == b[: len(a)] for a, b in itertools.pairwise(growing)), "each update extends the last"
    assert growing[-1] == answer.text


def test_the_llm_judge_grades_located_claims_through_the_router(personas, lighthouse, fake_llm):
    judged = json.dumps({"verdict": "contradicts", "rationale": "The passage gives 48 metres, not 50.", "confidence": 0.8})
    fake_llm.script("groq", {"content": answer_json(("The tower is 50 metres tall.", 1, TALL))}, {"content": judged})
    run = ask(personas)
    (claim,) = run.claims
    assert claim["quote_status"] == "located"
    assert claim["verdict"] == "contradicts"
    assert claim["judge"] == "llm:groq"
    assert claim["rationale"] == "The passage gives 48 metres, not 50."
    judge_call = fake_llm.calls("groq")[1]["body"]
    assert judge_call["response_format"] == {"type": "json_object"}
    assert "«The tower is 48 metres tall" in judge_call["messages"][-1]["content"], "the quote is marked in its passage"
    assert [(a["provider"], a["purpose"]) for a in run.attempts] == [("groq", "generate"), ("groq", "judge")]
    assert run.risk != "low"


AUTOMATED = "The light was automated in 1972 and is now monitored from Edinburgh."


def judge_calls(fake_llm, provider: str) -> list[dict]:
    return [c for c in fake_llm.calls(provider) if c["body"]["messages"][0]["content"].startswith("You check whether")]


def test_the_llm_judges_only_the_claims_the_local_judge_is_unsure_of_all_in_one_call(personas, lighthouse, fake_llm):
    reply = {"judgements": [{"item": 1, "verdict": "supports", "rationale": "The passage says so.", "confidence": 0.9}]}
    fake_llm.script(
        "groq",
        {
            "content": answer_json(
                (TALL, 1, TALL),  # the claim is its quote: decided without a model
                ("Alan Stevenson built it over six years.", 1, BUILT),
                ("It has been automated since 1972.", 1, AUTOMATED),
            )
        },
        {"content": json.dumps(reply)},
    )
    run = ask(personas)
    (call,) = judge_calls(fake_llm, "groq")
    prompt = call["body"]["messages"][-1]["content"]
    assert "Claim: Alan Stevenson built it over six years." in prompt
    assert "Claim: It has been automated since 1972." in prompt
    assert f"Claim: {TALL}" not in prompt, "a claim decided locally is never sent"
    by_text = {c["text"]: c for c in run.claims}
    assert by_text[TALL]["judge"] == "verifier"
    assert by_text["Alan Stevenson built it over six years."]["judge"] == "llm:groq"
    assert by_text["Alan Stevenson built it over six years."]["rationale"] == "The passage says so."
    left_out = by_text["It has been automated since 1972."]
    assert left_out["judge"] == "verifier", "a claim the reply leaves out keeps the local verdict"
    assert left_out["rationale"].endswith("(local judge: the LLM's reply left this claim out)")
    record = AuditRecord.objects.get(query_run_id=run.pk).payload
    assert [c["judge"] for c in record["stages"]["verify"]["claims"]] == [c["judge"] for c in run.claims]
    assert [a["purpose"] for a in run.attempts] == ["generate", "judge"]


def test_a_claim_the_local_judge_is_unsure_of_says_so_everywhere_and_is_never_called_unsupported(personas, lighthouse, fake_llm):
    # The LLM answers but no LLM grades: the local judge decides, and at the default target
    # precision it cannot verify a claim in other words than its quote.
    fake_llm.script("groq", {"content": GOOD}, {"content": "I think it is fine"})
    fake_llm.script("zhipuai", {"status": 503})
    run = ask(personas)
    (claim,) = run.claims
    assert (claim["outcome"], claim["verdict"]) == ("unsure", "unsure")
    assert 0.0 <= claim["p_supports"] <= 1.0
    assert run.risk != "low"
    assert "1 of 1 claim(s) not checked by the local judge: read their quotes" in run.trust["reasons"]
    page = personas.client("member").get(reverse("answer", args=["acme", run.pk])).content.decode()
    assert "not checked by the local judge — read the quote" in page
    assert "p(supports)" in page
    api = personas.client("member").get(reverse("api_query", args=[personas.workspace_a.pk, run.pk])).json()
    assert (api["claims"][0]["outcome"], api["claims"][0]["judge"]) == ("unsure", "verifier")
    record = AuditRecord.objects.get(query_run_id=run.pk)
    assert record.payload["stages"]["verify"]["claims"][0]["outcome"] == "unsure"
    audit_page = personas.client("member").get(reverse("audit_detail", args=["acme", record.pk])).content.decode()
    assert "not checked by the local judge — read the quote" in audit_page
    # Found among the unsure, never among the unsupported.
    listed = {
        v: personas.client("member").get(reverse("audit_list", args=["acme"]), {"verdict": v}).content.decode()
        for v in ("unsure", claim["local_verdict"])
    }
    assert str(record.pk) in listed["unsure"]
    assert str(record.pk) not in listed[claim["local_verdict"]]


def test_a_claim_that_is_its_quote_is_verified_without_a_model(personas, lighthouse, fake_llm):
    fake_llm.script("groq", {"content": answer_json((TALL, 1, TALL))})
    run = ask(personas)
    (claim,) = run.claims
    assert (claim["outcome"], claim["judge"]) == ("verified", "verifier")
    assert judge_calls(fake_llm, "groq") == [], "nothing for the LLM to read"


def test_a_true_claim_with_a_fabricated_quote_is_flagged_without_a_judge_call(personas, lighthouse, fake_llm):
    fake_llm.script(
        "groq", {"content": answer_json(("The tower is 48 metres tall.", 1, "The tower rises 48 metres above the reef at high tide."))}
    )
    run = ask(personas)
    assert run.claims[0]["verdict"] == "hallucinated_quote"
    assert len(fake_llm.calls("groq")) == 1, "no judge call for a quote that is not in its source"


def test_when_no_llm_answers_the_judge_call_the_local_judge_grades(personas, lighthouse, fake_llm):
    fake_llm.script("groq", {"content": GOOD}, {"content": "I think it is fine"})
    fake_llm.script("zhipuai", {"status": 503})
    run = ask(personas)
    (claim,) = run.claims
    assert claim["judge"] == "verifier"
    assert "no LLM provider answered" in claim["rationale"]
    # The local judge cannot verify a paraphrase at the default target: it says so, and keeps
    # its tentative verdict apart.
    assert claim["verdict"] == "unsure"
    assert claim["local_verdict"] in {"supports", "partial", "contradicts", "not_found"}
