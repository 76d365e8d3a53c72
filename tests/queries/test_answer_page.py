"""The answer page and the audit detail page: claims with their highlighted quotes, pages,
trust, refusals, and the trace walked stage by stage."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from apps.audits.models import AuditEvent, AuditRecord
from apps.documents import services as documents
from apps.queries.services import query_answer
from apps.workspaces.services import settings_update
from tests.queries.test_generation import LIGHTHOUSE, lighthouse  # noqa: F401 - the fixture

QUESTION = "When was the Skerryvore lighthouse built and how tall is it?"


def page_of(client, run, **params) -> str:
    response = client.get(reverse("answer", args=["acme", run.pk]), params)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def figure(page: str, number: int) -> str:
    return re.search(rf'<figure class="passage" data-passage="{number}"[^>]*>.*?</figure>', page, re.S).group(0)


@pytest.fixture
def answered(personas, lighthouse):  # noqa: F811
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION)
    assert len(run.claims) >= 2, run.claims
    return run


def test_the_chosen_claims_quote_is_highlighted_where_it_stands_in_its_passage(personas, answered):
    client = personas.client("viewer")
    first = page_of(client, answered)
    claim = answered.claims[0]
    shown = figure(first, 1)
    assert "hidden" not in shown.split(">")[0], "the first claim is chosen to begin with"
    assert "hidden" in figure(first, 2).split(">")[0]
    assert f"<mark>{LIGHTHOUSE[claim['start'] : claim['end']]}</mark>" in shown
    assert re.sub(r"<[^>]+>", "", re.search(r"<blockquote.*?</blockquote>", shown, re.S).group(0)) in LIGHTHOUSE
    assert 'data-claim="1" aria-controls="passage-panel" aria-pressed="true"' in first

    second = page_of(client, answered, claim=2)  # what the claim's button asks for without JavaScript
    assert "hidden" in figure(second, 1).split(">")[0]
    claim = answered.claims[1]
    assert f"<mark>{LIGHTHOUSE[claim['start'] : claim['end']]}</mark>" in figure(second, 2)
    assert 'data-claim="2" aria-controls="passage-panel" aria-pressed="true"' in second


def test_every_claim_shows_its_verdict_in_words(personas, answered):
    page = page_of(personas.client("viewer"), answered)
    for claim in answered.claims:
        assert f'<span class="badge verdict-{claim["verdict"]}">{claim["verdict"].replace("_", " ")}</span>' in page


def test_the_trust_panel_shows_risk_confidence_and_the_weighted_components(personas, answered):
    page = page_of(personas.client("viewer"), answered)
    assert f"{answered.risk.capitalize()} risk</span>" in page
    assert f'<strong class="confidence">{answered.confidence:.0%}</strong>' in page
    for name, weight in (("Retrieval", 0.2), ("Source agreement", 0.4), ("Grounding", 0.4)):
        assert f'<dt>{name} <small class="meta">weight {weight}</small></dt>' in page
    assert f"{answered.trust['grounding']:.2f}" in page
    assert "Low risk from 75%, Medium from 50%" in page


def test_the_answer_keeps_the_weights_it_was_scored_with_after_the_settings_change(personas, answered):
    settings_update(workspace=personas.workspace_a, actor=personas.owner, changes={"trust_weight_retrieval": 0.9, "risk_low_cutoff": 0.9})
    page = page_of(personas.client("viewer"), answered)
    assert '<dt>Retrieval <small class="meta">weight 0.2</small></dt>' in page
    assert "Low risk from 75%" in page


def test_sources_show_title_and_scores(personas, answered):
    page = page_of(personas.client("viewer"), answered)
    source = answered.sources[0]
    assert f"<strong>[1] {source['title']}</strong>" in page
    assert f"relevance <strong>{source['rerank_score']:.3f}</strong>" in page
    assert f"fused (RRF) {source['fused_score']:.4f}" in page


def test_a_refusal_shows_the_best_score_against_the_threshold(personas, lighthouse):  # noqa: F811
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question=QUESTION, threshold_override=0.99)
    assert run.insufficient
    page = page_of(personas.client("viewer"), run)
    assert '<span class="badge refusal">Refused</span>' in page
    gate = run.gate
    weaker = f"relevance {gate['relevance']:.3f} and answerability {gate['answerability']:.3f}"
    score = f"<strong>{gate['top_score']:.3f}</strong> against the gate threshold <strong>0.990</strong>"
    assert f"Gate score (the weaker of {weaker}) {score}" in page
    assert "Refused by the confidence gate, before any answer was generated" in page
    assert 'id="claims"' not in page
    # A refusal claims nothing: no confidence meter, no risk badge, no 100 %.
    assert "confidence-meter" not in page
    assert "risk-low" not in page
    assert "100 %" not in page
    assert "no confidence score and no risk label" in page


def _pdf(pages: list[str]) -> bytes:
    """A small PDF with one line of Helvetica text per page."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream.decode()}\nendstream")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objects)} 0 R /Resources << /Font << /F1 3 0 R >> >> >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_a_pdf_passage_names_its_page(personas):
    pdf = _pdf(["The Brekkvik ferry leaves the harbour every hour.", "The Halvorsen bridge is 412 metres long."])
    document, _ = documents.document_create(workspace=personas.workspace_a, actor=None, filename="guide.pdf", data=pdf, enqueue=False)
    documents.document_ingest(workspace=personas.workspace_a, document_id=document.pk)
    settings_update(workspace=personas.workspace_a, actor=personas.owner, changes={"gate_threshold": 0.0})
    run = query_answer(workspace=personas.workspace_a, actor=personas.member, question="How long is the Halvorsen bridge?")
    assert run.sources[0]["first_page"] is not None
    page = page_of(personas.client("viewer"), run)
    pages = run.sources[0]["first_page"], run.sources[0]["last_page"]
    label = f"p. {pages[0]}" if pages[0] == pages[1] else f"pp. {pages[0]}–{pages[1]}"
    assert f'<span class="page">{label}</span>' in page
    assert "2" in label, "the bridge is on page 2"


# --- the audit detail page ------------------------------------------------------------------------


def detail(client, record) -> str:
    response = client.get(reverse("audit_detail", args=["acme", record.pk]))
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_the_audit_detail_walks_the_trace_stage_by_stage(personas, answered):
    saved = AuditRecord.objects.get(query_run_id=answered.pk)
    page = detail(personas.client("viewer"), saved)
    headings = re.findall(r"<h2>(\d · \w+)", page)
    assert headings == ["1 · Retrieve", "2 · Rerank", "3 · Correct", "4 · Gate", "5 · Generate", "6 · Verify", "7 · Score", "8 · Record"]
    assert f"“{QUESTION}”" in page
    assert "Asked by mia" in page
    candidates = saved.payload["stages"]["retrieve"]["candidates"]
    assert page.count("<tr>\n        <td>skerryvore") == len(candidates)
    assert f"Reranker: <strong>{saved.payload['rerank']['reranker']}</strong>" in page
    assert f'Retrieval judged <span class="badge crag-{saved.payload["corrective"]["verdict"]}">' in page
    assert saved.payload["gate"]["reason"] in page
    assert "<td>local" in page, "the provider attempt"
    claim = answered.claims[0]
    assert f"<mark>{LIGHTHOUSE[claim['start'] : claim['end']]}</mark>" in page
    assert f"confidence <strong>{answered.confidence:.0%}</strong>" in page
    assert saved.hash in page
    assert "✓ verified" in page
    assert "<code>gate_threshold</code></th><td>0.25</td>" in page


def test_the_audit_detail_of_an_altered_record_says_it_does_not_verify(personas, answered):
    saved = AuditRecord.objects.get(query_run_id=answered.pk)
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute("UPDATE audits_auditrecord SET actor_label = 'someone else' WHERE id = %s", [saved.pk])
        cursor.execute("SET session_replication_role = origin")
    page = detail(personas.client("viewer"), AuditRecord.objects.get(pk=saved.pk))
    assert "✗ does not verify" in page
    assert "manage.py audit_verify --workspace acme" in page


def test_admin_events_list_uploads_settings_changes_and_exports(personas, lighthouse):  # noqa: F811
    settings_update(workspace=personas.workspace_a, actor=personas.admin, changes={"gate_threshold": 0.6})
    personas.client("viewer").get(reverse("audit_export", args=["acme", "csv"]))
    assert AuditEvent.objects.get(action="document.upload").data["filename"] == "skerryvore.txt"
    page = html.unescape(personas.client("viewer").get(reverse("audit_events", args=["acme"])).content.decode())
    assert page.index("audit.export") < page.index("settings.update") < page.index("document.upload"), "newest first"
    assert "gate threshold: 0.25 → 0.6" in page
    assert "filename: skerryvore.txt" in page


def test_each_claim_says_whether_it_answers_the_question_on_the_page_in_the_api_and_in_the_audit(personas, answered):
    claims = answered.claims
    assert all(isinstance(c["answer_score"], float) for c in claims), "every located claim was read against the question"
    assert all(0.0 <= c["answers"] <= 1.0 for c in claims), "and calibrated (apps/pipeline/data/answering.json)"
    assert answered.trust["answering"] == max(c["answers"] for c in claims), "the answer answers as well as its best claim"
    page = page_of(personas.client("viewer"), answered)
    for claim in claims:
        said = "answers the question" if claim["answers"] >= 0.5 else "may not answer the question"
        assert f"{said} ({round(claim['answers'] * 100)}%)" in page
    assert "Answers the question" in page, "the trust components name it"

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {personas.api_key('viewer')}")
    api = client.get(reverse("api_query", args=[personas.workspace_a.pk, answered.pk])).json()
    assert [c["answers"] for c in api["claims"]] == [c["answers"] for c in claims]
    assert api["trust"]["answering"] == answered.trust["answering"]

    record = AuditRecord.objects.get(query_run_id=answered.pk)
    assert [c["answers"] for c in record.payload["stages"]["verify"]["claims"]] == [c["answers"] for c in claims]
    audit = html.unescape(personas.client("viewer").get(reverse("audit_detail", args=["acme", record.pk])).content.decode())
    assert "Answers the question" in audit
