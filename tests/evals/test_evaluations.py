"""Evaluation sets and runs: exact metrics, the sweep against real re-runs, uploads refused
whole with a message naming the line, evaluation traffic kept out of the history, and the
one-click recommendation (admins only, audited)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from apps.audits.models import AuditEvent, AuditRecord
from apps.audits.selectors import AuditFilters, audit_record_list
from apps.core.errors import ApplicationError
from apps.documents.services import document_create, document_ingest
from apps.evals.models import EvalQuestion, EvalRun, EvalSet
from apps.evals.selectors import eval_run_outcomes, eval_run_report
from apps.evals.services import eval_run_apply, eval_run_create, eval_run_execute, eval_set_create
from apps.evals.sweep import (
    ANSWERABLE,
    UNANSWERABLE,
    Outcome,
    crag_suggestion,
    evaluation_metrics,
    evaluation_sweep,
    recommend_middle,
)
from apps.queries.models import QueryRun
from apps.queries.selectors import query_run_list
from apps.queries.services import query_answer
from apps.workspaces.models import WorkspaceSettings
from apps.workspaces.selectors import settings_get

DOCUMENTS = {
    "bakery.txt": "The Rye Street bakery opens at six in the morning. Its owner is Mara Lind. It sells rye bread and cinnamon buns.",
    "moons.txt": "Triton is the largest moon of Neptune. It orbits in the direction opposite to Neptune's rotation.",
}
TINY_SET = [
    {"question": "When does the Rye Street bakery open?", "answerable": True, "expected_answer": "six in the morning"},
    {"question": "Which planet does Triton orbit?", "answerable": True, "expected_answer": "Neptune", "expected_source": "moons.txt"},
    # the right words from the wrong document: answered, but not correct
    {"question": "What is the largest moon of Neptune?", "answerable": True, "expected_answer": "Triton", "expected_source": "bakery"},
    {"question": "What is the boiling point of mercury?", "answerable": False},
    {"question": "Who won the 1998 football world cup?", "answerable": False},
]


def jsonl(rows: list[dict]) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def ingest(workspace) -> None:
    for name, text in DOCUMENTS.items():
        document, _ = document_create(workspace=workspace, actor=None, filename=name, data=text.encode(), enqueue=False)
        document_ingest(workspace=workspace, document_id=document.pk)


def o(
    kind, answered, score, correct=False, *, naive=True, naive_correct=False, risk="low", naive_risk="medium", retrieval=None, graded=True
):
    return Outcome(kind, answered, score, correct, naive, naive_correct, graded, risk, naive_risk, retrieval)


# --- metrics on Outcome lists, counted by hand --------------------------------------------------

KNOWN = [
    o(ANSWERABLE, True, 0.9, True, naive_correct=True, retrieval=0.9),
    o(ANSWERABLE, True, 0.6, False, risk="medium", retrieval=0.6),
    o(ANSWERABLE, True, 0.45, True, naive_correct=True, risk="high", retrieval=0.45),
    o(ANSWERABLE, True, 0.7, graded=False, retrieval=0.7),  # nothing to grade against
    o(UNANSWERABLE, True, 0.55, risk="high", retrieval=0.55),
    o(UNANSWERABLE, False, None, naive=False, retrieval=0.2),
    o(UNANSWERABLE, True, 0.4, retrieval=0.4),
]


def test_evaluation_metrics_are_counted_by_hand():
    at = evaluation_metrics(KNOWN, threshold=0.5)
    assert at["answer_rate"] == 0.75  # 0.9, 0.6, 0.7 pass; 0.45 does not
    assert at["correct_rate"] == round(1 / 3, 4)  # of the 3 graded: only 0.9 is answered and correct
    assert at["refusal_recall"] == round(2 / 3, 4)  # 0.55 still answered
    assert at["refusal_precision"] == round(2 / 3, 4)  # refused: 0.45 (answerable), None, 0.4
    assert at["hallucination_rate"] == round(1 / 3, 4)
    assert at["risk"] == {
        "answerable": {"low": 2, "medium": 1, "high": 0, "refused": 1},
        "unanswerable": {"low": 0, "medium": 0, "high": 1, "refused": 2},
    }
    naive = evaluation_metrics(KNOWN, threshold=None)
    assert (naive["answer_rate"], naive["correct_rate"], naive["hallucination_rate"]) == (1.0, round(2 / 3, 4), round(2 / 3, 4))
    assert naive["refusal_precision"] == 1.0
    assert naive["risk"]["unanswerable"] == {"low": 0, "medium": 2, "high": 0, "refused": 1}


def test_sweep_recommendation_and_crag_thresholds_follow_their_rules():
    rows = {r["threshold"]: r for r in evaluation_sweep(KNOWN, [0.0, 0.42, 0.5, 0.56, 0.58, 0.6, 0.65, 0.8])}
    assert rows[0.0] == {"threshold": 0.0, "answer_rate": 1.0, "refusal_rate": round(1 / 3, 4), "f1": 0.5}
    assert (rows[0.58]["refusal_rate"], rows[0.58]["answer_rate"]) == (1.0, 0.75)
    assert rows[0.58]["f1"] == round(2 * 0.75 * 1 / 1.75, 4)  # refused 4, 3 of them unanswerable
    assert rows[0.65]["f1"] == 0.75  # 0.6 now refused too
    # 0.56, 0.58 and 0.6 share the best F1 among those answering at least half: the middle one
    assert recommend_middle(list(rows.values()), min_answer_rate=0.5) == 0.58
    crag = crag_suggestion(KNOWN, gate=0.58, share=0.0)
    assert crag == {"crag_lower": 0.45, "crag_upper": 0.58}  # lower ≤ the lowest answerable; upper above 0.55, at least the gate
    assert crag_suggestion(KNOWN, gate=0.5, share=0.0)["crag_upper"] == 0.56


# --- files ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("set.jsonl", b'{"question": "Fine?", "answerable": true}\n{"question": "Bad", "answerable": "maybe"}', "Line 2: “answerable”"),
        ("set.jsonl", b'{"question": "Fine?", "answerable": true}\n\n{"question": ', "Line 3 is not valid JSON"),
        ("set.jsonl", b'{"answerable": false}', "Line 1: “question” is missing"),
        ("set.csv", b"question,answerable\nFine?,yes\nBad?,perhaps\n", "Line 3: “answerable” must be true or false, not “perhaps”"),
        ("set.csv", b"prompt,answerable\nFine?,yes\n", "Line 1 (the header) lacks the column(s) question"),
        ("set.json", b'{"data": [{"paragraphs": [{"qas": [{"question": "Q?", "is_impossible": "no"}]}]}]}', "data[0].paragraphs[0].qas[0]"),
        ("set.json", b'{"version": "v2.0"}', "needs a top-level “data” list"),
        ("set.txt", b"question", "Upload a .jsonl, .csv or SQuAD 2.0 .json file"),
        ("set.jsonl", b"\n\n", "holds no questions"),
    ],
)
def test_a_bad_file_is_refused_whole_with_a_message_naming_the_line(personas, name, content, message):
    with pytest.raises(ApplicationError) as refused:
        eval_set_create(workspace=personas.workspace_a, actor=personas.member, filename=name, data=content)
    assert message in refused.value.message
    assert refused.value.field == "file"
    assert (EvalSet.objects.count(), EvalQuestion.objects.count()) == (0, 0)


def test_csv_and_squad_files_become_questions(personas):
    csv_set = eval_set_create(
        workspace=personas.workspace_a,
        actor=personas.member,
        filename="mixed.csv",
        data=b"question,answerable,expected_answer,expected_source\nWho owns it?,TRUE,Mara Lind,bakery.txt\nWhat is on Mars?,no,,\n",
    )
    assert [(q.question, q.answerable, q.expected_answers, q.expected_source) for q in csv_set.questions.order_by("ordinal")] == [
        ("Who owns it?", True, ["Mara Lind"], "bakery.txt"),
        ("What is on Mars?", False, [], ""),
    ]
    squad = {
        "data": [
            {
                "title": "Bakery",
                "paragraphs": [
                    {
                        "context": DOCUMENTS["bakery.txt"],
                        "qas": [
                            {"question": "Who owns it?", "is_impossible": False, "answers": [{"text": "Mara Lind"}, {"text": "Lind"}]},
                            {"question": "When does it close?", "is_impossible": True, "answers": []},
                        ],
                    }
                ],
            }
        ]
    }
    squad_set = eval_set_create(workspace=personas.workspace_a, actor=personas.member, filename="dev.json", data=json.dumps(squad).encode())
    assert (squad_set.source_format, squad_set.question_count, squad_set.answerable_count) == ("squad", 2, 1)
    assert squad_set.questions.get(ordinal=1).expected_answers == ["Mara Lind", "Lind"]


def test_the_upload_page_shows_the_refusal_and_keeps_nothing(personas):
    client = personas.client("member")
    bad = SimpleUploadedFile("set.jsonl", b'{"question": "Q?", "answerable": true}\n{"question": "", "answerable": false}')
    response = client.post(reverse("evaluations", args=["acme"]), {"file": bad})
    assert response.status_code == 400
    assert "Line 2: “question” is missing or empty." in response.content.decode()
    assert not EvalSet.objects.exists()


# --- a tiny workspace, end to end -------------------------------------------------------------


@pytest.fixture
def tiny(personas, tmp_path):
    ingest(personas.workspace_a)
    path = tmp_path / "tiny.jsonl"
    path.write_bytes(jsonl(TINY_SET))
    return path


def test_evaluate_prints_exact_metrics_and_its_sweep_matches_real_runs_at_other_thresholds(personas, tiny):
    out = StringIO()
    call_command("evaluate", workspace="acme", set_path=tiny, stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert (result["n"], result["n_answerable"], result["n_unanswerable"], result["threshold"]) == (5, 3, 2, 0.25)
    assert result["verified"] | {"risk": None} == {
        "answer_rate": 1.0,
        "correct_rate": round(2 / 3, 4),  # the third cites the wrong document
        "refusal_precision": 1.0,
        "refusal_recall": 1.0,
        "hallucination_rate": 0.0,
        "risk": None,
    }
    assert result["verified"]["risk"]["unanswerable"]["refused"] == 2
    assert sum(result["verified"]["risk"]["answerable"].values()) == 3
    assert result["naive"]["answer_rate"] == 1.0
    assert len(result["sweep"]) == 51
    recommended = result["recommended"]
    assert recommended["crag_lower"] <= recommended["gate_threshold"] <= recommended["crag_upper"]

    # The sweep is read from recorded scores; asking again at other thresholds must agree.
    run = EvalRun.objects.get(pk=result["run"])
    outcomes = eval_run_outcomes(run)
    questions = [q["question"] for q in TINY_SET]
    rows = {r["threshold"]: r for r in result["sweep"]}
    scores = sorted(o.top_score for o in outcomes if o.top_score is not None)
    thresholds = [0.5, round((scores[0] + scores[1]) / 2, 2), round((scores[1] + scores[2]) / 2, 2)]
    assert len(set(thresholds)) == 3
    for t in thresholds:
        asked = [query_answer(workspace=personas.workspace_a, actor=None, question=q, threshold_override=t) for q in questions]
        answered = [not a.insufficient for a in asked]
        assert answered == [o.top_score is not None and o.top_score >= t for o in outcomes], t
        answer_rate = round(sum(a for a, q in zip(answered, TINY_SET, strict=True) if q["answerable"]) / 3, 4)
        assert evaluation_metrics(outcomes, threshold=t)["answer_rate"] == answer_rate
        if t in rows:
            assert rows[t]["answer_rate"] == answer_rate


def test_evaluation_answers_stay_out_of_the_history_unless_asked(personas, tiny):
    person = query_answer(workspace=personas.workspace_a, actor=personas.member, question="When does the bakery open?")
    eval_set = eval_set_create(workspace=personas.workspace_a, actor=personas.member, filename="tiny.jsonl", data=tiny.read_bytes())
    run = eval_run_create(workspace=personas.workspace_a, actor=personas.member, set_id=eval_set.pk, enqueue=False)
    eval_run_execute(workspace=personas.workspace_a, run_id=run.pk)

    assert AuditRecord.objects.filter(workspace=personas.workspace_a).count() == 1 + 2 * len(TINY_SET)
    history = audit_record_list(workspace=personas.workspace_a)
    assert [r.query_run_id for r in history] == [person.pk]
    assert audit_record_list(workspace=personas.workspace_a, filters=AuditFilters(include_evaluation=True)).count() == 11
    assert list(query_run_list(workspace=personas.workspace_a)) == [person]
    assert QueryRun.objects.filter(evaluation=True).count() == 10
    record = AuditRecord.objects.filter(evaluation=True).first()
    assert (record.payload["evaluation"], record.actor_label) == (True, "evaluation: tiny")

    page = personas.client("viewer").get(reverse("audit_list", args=["acme"]))
    assert "<strong>1</strong> record" in page.content.decode()
    page = personas.client("viewer").get(reverse("audit_list", args=["acme"]), {"evaluation": "on"})
    assert "<strong>11</strong> records" in page.content.decode()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {personas.token('viewer')}")
    url = reverse("api_audits", args=[personas.workspace_a.pk])
    assert (api.get(url).json()["count"], api.get(url, {"evaluation": "true"}).json()["count"]) == (1, 11)


def test_only_owners_and_admins_apply_the_recommendation_and_it_is_audited(personas, tiny):
    WorkspaceSettings.objects.filter(workspace=personas.workspace_a).update(gate_threshold=0.8)  # too strict for this set
    eval_set = eval_set_create(workspace=personas.workspace_a, actor=personas.admin, filename="tiny.jsonl", data=tiny.read_bytes())
    run = eval_run_create(workspace=personas.workspace_a, actor=personas.admin, set_id=eval_set.pk, enqueue=False)
    run = eval_run_execute(workspace=personas.workspace_a, run_id=run.pk)
    recommended = eval_run_report(run)["recommended"]
    assert recommended["gate_threshold"] < 0.8
    before = settings_get(workspace=personas.workspace_a)
    url = reverse("eval_run_apply", args=["acme", run.pk])

    page = personas.client("member").get(reverse("eval_run", args=["acme", run.pk])).content.decode()
    assert "<svg" in page
    assert "Apply recommendation" not in page
    for who in ("member", "viewer"):
        assert personas.client(who).post(url).status_code == 403
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {personas.token('member')}")
    assert api.post(reverse("api_eval_run_apply", args=[personas.workspace_a.pk, run.pk])).status_code == 403
    assert settings_get(workspace=personas.workspace_a).gate_threshold == before.gate_threshold
    assert not AuditEvent.objects.filter(action="evaluation.apply").exists()

    assert "Apply recommendation" in personas.client("admin").get(reverse("eval_run", args=["acme", run.pk])).content.decode()
    response = personas.client("admin").post(url, follow=True)
    assert "Applied to the workspace&#x27;s settings" in response.content.decode()
    after = settings_get(workspace=personas.workspace_a)
    assert (after.gate_threshold, after.crag_lower, after.crag_upper) == (
        recommended["gate_threshold"],
        recommended["crag_lower"],
        recommended["crag_upper"],
    )
    change = AuditEvent.objects.get(action="settings.update")
    assert change.actor == personas.admin.user
    assert change.data["changes"]["gate_threshold"] == {"from": before.gate_threshold, "to": recommended["gate_threshold"]}
    assert AuditEvent.objects.get(action="evaluation.apply").data["run"] == str(run.pk)
    # a second click changes nothing more
    eval_run_apply(workspace=personas.workspace_a, actor=personas.owner, run_id=run.pk)
    assert AuditEvent.objects.filter(action="settings.update").count() == 1


def test_the_api_uploads_lists_shows_runs_and_deletes_sets(personas):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {personas.token('member')}")
    ws = personas.workspace_a.pk
    bad = api.post(reverse("api_eval_sets", args=[ws]), {"file": SimpleUploadedFile("s.csv", b"question\nQ?\n")}, format="multipart")
    assert bad.status_code == 400
    assert bad.json()["error"]["details"] == {"file": ["“s.csv”: Line 1 (the header) lacks the column(s) answerable."]}
    created = api.post(
        reverse("api_eval_sets", args=[ws]),
        {"file": SimpleUploadedFile("s.jsonl", jsonl(TINY_SET)), "name": "Tiny"},
        format="multipart",
    )
    assert created.status_code == 201
    body = created.json()
    assert (body["name"], body["question_count"], body["answerable_count"]) == ("Tiny", 5, 3)
    assert body["questions"][1]["expected_source"] == "moons.txt"
    assert [s["name"] for s in api.get(reverse("api_eval_sets", args=[ws])).json()["results"]] == ["Tiny"]
    started = api.post(reverse("api_eval_runs", args=[ws, body["id"]]))
    assert started.status_code == 202
    run = started.json()
    assert (run["status"], run["progress_total"], run["gate_threshold"]) == ("queued", 5, 0.25)
    assert api.get(run["url"]).json()["report"] is None, "no report before the run settles"
    assert api.get(reverse("api_eval_runs", args=[ws, body["id"]])).json()["count"] == 1
    assert api.delete(reverse("api_eval_set", args=[ws, body["id"]])).status_code == 204
    assert not EvalRun.objects.exists()
    assert AuditEvent.objects.filter(action__startswith="evaluation.").count() == 3


# --- hostile files (issue #20): a 400 naming the line, never a 500, nothing kept --------------------------

DEEP = "[" * 50_000 + "]" * 50_000
HOSTILE_SETS = {
    "a NUL byte in a JSONL value": ("set.jsonl", b'{"question": "Who\x00?", "answerable": true}', "Line 1"),
    "a \\u0000 escape in a JSONL value": (
        "set.jsonl",
        b'{"question": "Who\\u0000?", "answerable": true}',
        "Line 1: “question” holds a NUL",
    ),
    "a lone surrogate in a JSONL value": (
        "set.jsonl",
        b'{"question": "Who \\ud800?", "answerable": true}',
        "Line 1: “question” holds broken Unicode",
    ),
    "a NUL byte in a CSV value": ("set.csv", b"question,answerable\nWho\x00?,true\n", "Line 2: “question” holds a NUL"),
    "a control character in an expected answer": (
        "set.csv",
        b"question,answerable,expected_answer\nWho?,true,Mara\x07\n",
        "Line 2: “expected_answer”",
    ),
    "a JSONL line nested 50,000 deep": ("set.jsonl", DEEP.encode(), "Line 1 is not valid JSON (it nests more than"),
    "SQuAD JSON nested 50,000 deep": ("dev.json", ('{"data": ' + DEEP + "}").encode(), "nests more than"),
    "an expected source longer than its column": (
        "set.jsonl",
        b'{"question": "Who?", "answerable": true, "expected_source": "' + b"s" * 301 + b'"}',
        "longer than 300",
    ),
}


@pytest.mark.parametrize("case", HOSTILE_SETS, ids=list(HOSTILE_SETS))
def test_a_hostile_evaluation_file_is_a_400_naming_its_line_on_the_api_and_the_page(case, personas):
    filename, data, says = HOSTILE_SETS[case]
    api = APIClient()
    api.force_authenticate(personas.member.user)
    response = api.post(
        reverse("api_eval_sets", args=[personas.workspace_a.pk]), {"file": SimpleUploadedFile(filename, data)}, format="multipart"
    )
    assert response.status_code == 400, response.content[:300]
    assert says in response.json()["error"]["message"]
    page = personas.client("member").post(reverse("evaluations", args=["acme"]), {"file": SimpleUploadedFile(filename, data)})
    assert page.status_code == 400
    assert says in page.content.decode()
    assert not EvalSet.objects.exists()
    assert not EvalQuestion.objects.exists()


def test_a_set_name_holding_a_nul_is_refused_on_the_api_and_the_page(personas):
    data = jsonl([{"question": "Who owns it?", "answerable": True}])
    api = APIClient()
    api.force_authenticate(personas.member.user)
    url = reverse("api_eval_sets", args=[personas.workspace_a.pk])
    response = api.post(url, {"file": SimpleUploadedFile("set.jsonl", data), "name": "Bakery\x00"}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {
        "name": ["“name” holds a NUL character (U+0000), which text cannot hold; send plain text."]
    }
    page = personas.client("member").post(
        reverse("evaluations", args=["acme"]), {"file": SimpleUploadedFile("set.jsonl", data), "name": "Bakery\x00"}
    )
    assert page.status_code == 400
    assert "“Name” holds a NUL character" in page.content.decode()
    assert not EvalSet.objects.exists()
