"""The shipped MiniLM verifier (models/verifier) on real pairs: no database, no network."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
import torch

from apps.pipeline.verifier import DEFAULT_PATH, SUPPORT_LABELS, Verifier

PREMISE = "In the randomised trial, daily aspirin reduced the risk of stroke by 20% in adults over 60."
ENTAILED = "Aspirin lowered the risk of stroke in older adults."
CONTRADICTED = "Aspirin increased the risk of stroke in older adults."
NEGATED = "Aspirin did not reduce the risk of stroke in older adults."
UNRELATED = "The Eiffel Tower was painted green in 1950."


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(DEFAULT_PATH, threads=1)


def test_the_shipped_folder_holds_what_model_json_describes() -> None:
    meta = json.loads((DEFAULT_PATH / "MODEL.json").read_text())
    assert meta["weights"], "MODEL.json lists no weights"
    for name, info in meta["weights"].items():
        assert hashlib.sha256((DEFAULT_PATH / name).read_bytes()).hexdigest() == info["sha256"], name
    assert meta["ships"] is True  # never ship weights trained on non-commercial data
    assert all(d["commercial_ok"] for d in meta["datasets"].values() if d["role"] == "train")
    assert sum(f.stat().st_size for f in DEFAULT_PATH.iterdir()) <= 50 * 1024 * 1024


def test_an_entailed_claim_scores_supports_above_a_negated_one(verifier: Verifier) -> None:
    entailed, negated = verifier.support([(PREMISE, ENTAILED), (PREMISE, NEGATED)])
    assert entailed["supports"] > 0.5 > negated["supports"]
    assert negated["contradicts"] > max(negated["supports"], negated["not_found"])
    assert entailed["supports"] > entailed["contradicts"]


def test_an_unrelated_claim_is_not_supported(verifier: Verifier) -> None:
    [unrelated] = verifier.support([(PREMISE, UNRELATED)])
    # Not supported is what counts; which of contradicts / not_found wins is unreliable (SNLI labels
    # an unrelated scene "contradiction"), so only the supports side is pinned here.
    assert unrelated["supports"] < 0.5
    assert unrelated["not_found"] > unrelated["supports"]


def test_the_sentence_that_answers_scores_above_an_unrelated_one(verifier: Verifier) -> None:
    question = "When was the Eiffel Tower completed?"
    answering, unrelated = verifier.answerability(
        [
            ("The Eiffel Tower was completed in 1889 as the entrance arch of the World's Fair.", question),
            ("Aspirin is widely used to reduce fever and relieve mild pain.", question),
        ]
    )
    assert answering > unrelated
    assert answering > 0.5 > unrelated


def test_a_batch_keeps_length_and_order_and_matches_single_calls(verifier: Verifier) -> None:
    pairs = [
        (PREMISE, ENTAILED),
        (PREMISE, CONTRADICTED),
        (PREMISE, UNRELATED),
        ("Short.", "A much longer claim than the premise it is checked against."),
    ]
    batch = verifier.support(pairs)
    assert len(batch) == len(pairs)
    assert [list(row) for row in batch] == [list(SUPPORT_LABELS)] * len(pairs)
    for row, pair in zip(batch, pairs, strict=True):
        [single] = verifier.support([pair])
        # Exact, not just close: the int8 backend scores one pair per call, so neighbours cannot shift it.
        assert all(math.isclose(row[k], single[k], abs_tol=1e-6) for k in SUPPORT_LABELS)
        assert math.isclose(sum(row.values()), 1.0, abs_tol=1e-5)
    reversed_rows = verifier.support(pairs[::-1])
    assert [r["supports"] for r in reversed_rows] == pytest.approx([r["supports"] for r in batch[::-1]], abs=1e-4)
    scores = verifier.answerability([(p, "Does aspirin reduce stroke risk?") for p, _ in pairs])
    assert len(scores) == len(pairs)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_bad_input_is_handled(verifier: Verifier) -> None:
    assert verifier.support([]) == []
    assert verifier.answerability([]) == []
    rows = verifier.support([("", ""), ("", ENTAILED), (PREMISE, "")])
    assert len(rows) == 3
    assert all(math.isclose(sum(r.values()), 1.0, abs_tol=1e-5) for r in rows)
    # Far past the 512-token limit of the encoder: truncated, not an indexing error.
    [long] = verifier.support([(" ".join([PREMISE] * 400), ENTAILED)])
    assert all(0.0 <= p <= 1.0 for p in long.values())
    [none_text] = verifier.answerability([(None, "Who?")])  # type: ignore[list-item]
    assert 0.0 <= none_text <= 1.0


def test_threads_apply_to_the_call_only() -> None:
    before = torch.get_num_threads()
    v = Verifier.load(DEFAULT_PATH, threads=1)
    v.support([(PREMISE, ENTAILED)])
    assert torch.get_num_threads() == before
