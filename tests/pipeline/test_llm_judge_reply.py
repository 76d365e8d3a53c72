"""The cascade's one judge call: what of the LLM's reply is read, claim by claim."""

from __future__ import annotations

import json

import pytest

from apps.pipeline.llm_judge import judge_messages, parse_judgements
from apps.pipeline.prompting import UnusableOutput


def test_each_usable_entry_is_read_and_a_garbled_one_is_left_to_the_local_verdict():
    reply = {
        "judgements": [
            {"item": 1, "verdict": "supports", "rationale": "Stated.", "confidence": 0.8},
            {"item": "2", "verdict": "contradicts", "confidence": 2},
            {"item": 3, "verdict": "probably"},
            {"verdict": "supports"},
            {"item": 1, "verdict": "not_found"},
        ]
    }
    judged = parse_judgements(f"```json\n{json.dumps(reply)}\n```")
    assert sorted(judged) == [1, 2]
    assert (judged[1].verdict, judged[1].rationale, judged[1].score) == ("supports", "Stated.", 0.8), "the first entry for an item counts"
    assert (judged[2].verdict, judged[2].score) == ("contradicts", 1.0)
    assert judged[2].rationale == "the LLM judged it contradicts"


def test_a_bare_judgement_is_read_as_the_first_item():
    assert parse_judgements(json.dumps({"verdict": "partial", "rationale": "Half.", "confidence": 0.5}))[1].verdict == "partial"


@pytest.mark.parametrize("reply", ["not json", "[]", json.dumps({"judgements": "all fine"}), json.dumps({"judgements": [{"item": 1}]})])
def test_a_reply_with_nothing_usable_is_unusable(reply):
    with pytest.raises(UnusableOutput):
        parse_judgements(reply)


def test_the_request_numbers_the_claims_and_marks_each_quote_in_its_passage():
    passage = "The tower is 48 metres tall. It was built in 1844."
    messages = judge_messages([("It is 48 m tall.", passage, 0, 28), ("It dates from 1844.", passage, 29, len(passage))])
    prompt = messages[-1]["content"]
    assert "Item 1\nPassage:\n«The tower is 48 metres tall.» It was built in 1844.\n\nClaim: It is 48 m tall." in prompt
    assert "Item 2\nPassage:\nThe tower is 48 metres tall. «It was built in 1844.»\n\nClaim: It dates from 1844." in prompt
