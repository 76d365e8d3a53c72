"""Answers people can act on: refusals that say what they are, citation marks in the text,
cited sources first, and answers that notice when their sources change and can be re-verified
(each re-verification a new audit record linked to the original, which stays as it was)."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from apps.audits.models import AuditRecord
from apps.audits.selectors import AuditFilters, audit_record_link_ok, audit_record_list
from apps.documents import services as documents
from apps.queries.models import QueryRun
from apps.queries.services import query_answer
from apps.queries.sources import query_run_reverify
from tests.conftest import ROOT
from tests.queries.test_generation import LIGHTHOUSE, lighthouse  # noqa: F401 - the fixture

QUESTION = "When was the Skerryvore lighthouse built and how tall is it?"


@pytest.fixture
def answered(personas, lighthouse):  # noqa: F811
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION)
    assert not run.insufficient
    assert run.claims
    return run


def api(personas, who: str, method: str, url: str, **data):
    client = personas.client(who)
    return getattr(client, method)(url, data, content_type="application/json", HTTP_AUTHORIZATION=f"Token {personas.token(who)}")


def run_url(personas, run, name="api_query") -> str:
    return reverse(name, args=[personas.workspace_a.pk, run.pk])


def page(personas, who: str, run) -> str:
    response = personas.client(who).get(reverse("answer", args=["acme", run.pk]))
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_a_gate_refusal_in_the_api_has_no_confidence_and_says_who_refused(personas, lighthouse):  # noqa: F811
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION, threshold_override=0.99)
    body = api(personas, "viewer", "get", run_url(personas, run)).json()
    assert body["refusal_triggered"] is True
    assert body["confidence_score"] is None
    assert body["hallucination_risk"] is None
    assert body["confidence"] is None
    assert body["risk"] == "refused"
    refusal = body["refusal"]
    assert refusal["by"] == "gate"
    assert refusal["threshold"] == 0.99
    assert refusal["score"] == run.gate["top_score"] < 0.99
    assert refusal["relevance"] == run.gate["relevance"]
    assert refusal["answerability"] == run.gate["answerability"]
    record = AuditRecord.objects.get(query_run_id=run.pk)
    assert record.risk == "refused"
    assert record.confidence is None
    assert record.payload["refusal"]["by"] == "gate"


def test_a_provider_that_finds_nothing_is_a_refusal_by_the_provider_with_the_gates_evidence(personas, lighthouse):  # noqa: F811
    question = "What percentage of the Skerryvore lighthouse keepers were married?"
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=question, threshold_override=0.0)
    assert run.insufficient
    assert run.gate["passed"]
    body = api(personas, "viewer", "get", run_url(personas, run)).json()
    assert body["refusal"]["by"] == "provider"
    assert body["refusal"]["provider"] == "local"
    assert "do not state a measured figure" in body["refusal"]["reason"]
    assert body["refusal"]["threshold_name"] == "the gate threshold (passed)"
    shown = page(personas, "viewer", run)
    assert "Refused by the provider, which found nothing in the passages that answers (local)" in shown
    assert "confidence-meter" not in shown


def test_the_answer_text_marks_each_claim_with_its_source(personas, answered):
    body = api(personas, "viewer", "get", run_url(personas, answered)).json()
    assert body["answer_marked"].count("[1]") == len(answered.claims)
    assert [c["claim"] for c in body["citations"]] == list(range(1, len(answered.claims) + 1))
    for citation, claim in zip(body["citations"], answered.claims, strict=True):
        assert answered.answer[citation["start"] : citation["end"]] == claim["text"]
    shown = page(personas, "viewer", answered)
    assert shown.count('class="cite" href="?claim=') == len(answered.claims)
    assert 'href="?claim=2#claims" data-claim="2"' in shown


def test_cited_sources_come_first_and_the_others_fold_under_also_retrieved(personas, lighthouse):  # noqa: F811
    for name, text in [("ferries.txt", "Ferries to Tiree leave Oban daily in summer."), ("tides.txt", "Tides at Tiree rise four metres.")]:
        doc, _ = documents.document_create(workspace=personas.workspace_a, actor=None, filename=name, data=text.encode(), enqueue=False)
        documents.document_ingest(workspace=personas.workspace_a, document_id=doc.pk)
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION, mode="naive")
    cited = {c["source"] for c in run.claims}
    assert cited
    assert len(run.sources) > len(cited), "something retrieved was not cited"
    shown = page(personas, "viewer", run)
    cited_list, also = shown.split('<details class="also-retrieved">')
    assert all(f'id="source-{n}"' in cited_list.split('class="sources cited-sources"')[1] for n in cited)
    assert all(f'id="source-{s["index"]}"' in also for s in run.sources if s["index"] not in cited)
    assert f"Also retrieved ({len(run.sources) - len(cited)}), not cited" in also


def test_deleting_a_cited_document_marks_the_answer_source_changed(personas, answered, lighthouse):  # noqa: F811
    documents.document_delete(workspace=personas.workspace_a, actor=personas.owner, document_id=lighthouse.pk)
    answered.refresh_from_db()
    assert answered.source_changed_at is not None
    assert [c["change"] for c in answered.source_changes] == ["deleted"]
    body = api(personas, "viewer", "get", run_url(personas, answered)).json()
    assert body["source_changed"] is True
    assert body["source_changes"][0]["title"] == "skerryvore"
    changed = audit_record_list(workspace=personas.workspace_a, filters=AuditFilters(source_changed=True))
    assert [r.query_run_id for r in changed] == [answered.pk]
    assert not audit_record_list(workspace=personas.workspace_a, filters=AuditFilters(source_changed=False)).exists()
    history = personas.client("viewer").get(reverse("audit_list", args=["acme"]), {"source_changed": "yes"}).content.decode()
    assert "source changed" in history
    assert "Re-verify against the current text" in page(personas, "member", answered)
    assert "Re-verify against the current text" not in page(personas, "viewer", answered), "a viewer may not re-verify"


def test_a_reindex_with_the_same_text_changes_nothing_and_one_with_new_text_is_noticed(personas, answered, lighthouse):  # noqa: F811
    documents.document_reindex(workspace=personas.workspace_a, actor=None, document_id=lighthouse.pk)
    documents.document_ingest(workspace=personas.workspace_a, document_id=lighthouse.pk)
    answered.refresh_from_db()
    assert answered.source_changed_at is None
    stored = lighthouse.file.storage
    with stored.open(lighthouse.file.name, "wb") as handle:
        handle.write(LIGHTHOUSE.replace("48 metres", "156 feet").encode())
    documents.document_reindex(workspace=personas.workspace_a, actor=None, document_id=lighthouse.pk)
    documents.document_ingest(workspace=personas.workspace_a, document_id=lighthouse.pk)
    answered.refresh_from_db()
    assert [c["change"] for c in answered.source_changes] == ["changed"]


def test_reverifying_after_a_delete_records_a_new_linked_record_and_keeps_the_original(personas, answered, lighthouse):  # noqa: F811
    original = AuditRecord.objects.get(query_run_id=answered.pk)
    documents.document_delete(workspace=personas.workspace_a, actor=personas.owner, document_id=lighthouse.pk)
    response = api(personas, "member", "post", run_url(personas, answered, "api_query_reverify"))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["reverifies"] == str(answered.pk)
    # The document is gone, so the claims cannot be checked: that is no hallucination.
    assert {c["verdict"] for c in body["claims"]} == {"source_deleted"}
    assert {c["quote_status"] for c in body["claims"]} == {"source_deleted"}
    assert all(c["rationale"] == "the cited document was deleted: this claim cannot be checked" for c in body["claims"])
    assert body["risk"] in ("medium", "high")
    assert any("cannot be checked: their document was deleted" in reason for reason in body["trust"]["reasons"])
    again = AuditRecord.objects.get(query_run_id=body["id"])
    assert again.payload["reverification_of"] == {
        "query_run_id": str(answered.pk),
        "audit_id": str(original.pk),
        "audit_sequence": original.sequence,
        "audit_hash": original.hash,
    }
    assert audit_record_link_ok(AuditRecord.objects.get(pk=original.pk)), "the original record is untouched"
    assert {r.query_run_id for r in audit_record_list(workspace=personas.workspace_a)} == {answered.pk, again.query_run_id}
    history = html.unescape(personas.client("viewer").get(reverse("audit_list", args=["acme"])).content.decode())
    assert f"re-verification of #{original.sequence}" in history
    assert "Re-verified:" in page(personas, "viewer", answered)


def test_after_a_delete_the_hallucinated_quote_filter_does_not_list_the_reverification(personas, answered, lighthouse):  # noqa: F811
    documents.document_delete(workspace=personas.workspace_a, actor=personas.owner, document_id=lighthouse.pk)
    again = query_run_reverify(workspace=personas.workspace_a, actor=personas.member, run_id=answered.pk)
    listed = audit_record_list(workspace=personas.workspace_a, filters=AuditFilters(verdict="hallucinated_quote"))
    assert again.pk not in {r.query_run_id for r in listed}
    unchecked = audit_record_list(workspace=personas.workspace_a, filters=AuditFilters(verdict="source_deleted"))
    assert [r.query_run_id for r in unchecked] == [again.pk]
    shown = page(personas, "viewer", again)
    assert "source deleted — cannot be checked" in shown
    assert "hallucinated quote" not in shown


def test_a_reverification_page_shows_its_one_stage_finished_and_none_pending(personas, answered):
    again = query_run_reverify(workspace=personas.workspace_a, actor=personas.member, run_id=answered.pk)
    shown = page(personas, "viewer", again)
    stages = shown.split('aria-label="Pipeline stages"')[1].split("</ol>")[0]
    assert "verify" in stages
    assert "pending" not in stages
    assert "retrieve" not in stages


def test_the_same_file_uploaded_again_after_a_delete_is_the_same_source(personas, answered, lighthouse):  # noqa: F811
    data = lighthouse.file.open("rb").read()
    documents.document_delete(workspace=personas.workspace_a, actor=personas.owner, document_id=lighthouse.pk)
    answered.refresh_from_db()
    assert [c["change"] for c in answered.source_changes] == ["deleted"]
    again, created = documents.document_create(
        workspace=personas.workspace_a, actor=personas.member, filename="skerryvore.txt", data=data, enqueue=False
    )
    assert created
    documents.document_ingest(workspace=personas.workspace_a, document_id=again.pk)
    answered.refresh_from_db()
    assert answered.source_changes == [], "the identical content reconnects the answer to its source"
    assert answered.source_changed_at is None
    checked = query_run_reverify(workspace=personas.workspace_a, actor=personas.member, run_id=answered.pk)
    assert [c["verdict"] for c in checked.claims] == [c["verdict"] for c in answered.claims]


def test_reverifying_an_unchanged_answer_keeps_its_verdicts(personas, answered):
    again = query_run_reverify(workspace=personas.workspace_a, actor=personas.member, run_id=answered.pk)
    assert [c["verdict"] for c in again.claims] == [c["verdict"] for c in answered.claims]
    assert [(c["start"], c["end"]) for c in again.claims] == [(c["start"], c["end"]) for c in answered.claims]
    assert again.source_changes == []


def test_a_refusal_cannot_be_reverified_and_says_why(personas, lighthouse):  # noqa: F811
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION, threshold_override=0.99)
    response = api(personas, "member", "post", run_url(personas, run, "api_query_reverify"))
    assert response.status_code == 400
    assert "nothing to re-verify" in response.json()["error"]["message"]
    assert not QueryRun.objects.filter(reverifies=run).exists()


def test_the_reverify_page_action_redirects_to_the_new_answer(personas, answered):
    response = personas.client("member").post(reverse("answer_reverify", args=["acme", answered.pk]))
    again = QueryRun.objects.get(reverifies=answered)
    assert response.status_code == 302
    assert response["Location"] == reverse("answer", args=["acme", again.pk])
    assert "A re-verification of" in page(personas, "member", again)


def test_the_texas_row_of_the_nics_table_answers_its_question_quoted_and_located(personas):
    path = ROOT.parent / "shared" / "data" / "docs" / "pdf" / "nics-background-checks-2015-11.pdf"
    doc, _ = documents.document_create(
        workspace=personas.workspace_a, actor=None, filename=path.name, data=path.read_bytes(), enqueue=False
    )
    doc = documents.document_ingest(workspace=personas.workspace_a, document_id=doc.pk)
    run = query_answer(
        workspace=personas.workspace_a, actor=personas.member, question="How many firearm background checks were run in Texas?"
    )
    assert not run.insufficient, run.answer
    lead = run.claims[0]
    assert lead["quote"].startswith("Texas ")
    assert lead["quote_status"] == "located"
    assert doc.text[lead["start"] : lead["end"]] == lead["quote"]
    assert "146,982" in lead["quote"], "the row's total"
