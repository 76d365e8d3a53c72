"""Answers that notice when their sources change, and re-verification against the current text.

An answer cites passages by document and offsets. When a cited document is deleted, or
re-indexed with text that differs where the passage stood, the answer is marked (its run's
`source_changes`, shown on its page, in the history filter and by the API). A member can then
re-verify it: its claims are located and judged again against the documents' current text, as a
new run with its own audit record linked to the original, which stays as it was."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.audits.selectors import audit_record_for_run
from apps.audits.services import audit_record_create, audit_source_change_note
from apps.core.errors import ApplicationError
from apps.documents.models import Document
from apps.pipeline.rescoring import reverify
from apps.pipeline.types import Answer, Candidate, Claim
from apps.queries.models import QueryRun, QueryStatus
from apps.queries.services import answer_params_for, claim_row, tools_for, trust_row
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import settings_get
from apps.workspaces.tenancy import access, require
from apps.workspaces.tenancy import actor_label as label_of

DELETED, CHANGED = "deleted", "changed"
CHANGE_LABELS = {DELETED: "the document was deleted", CHANGED: "its text changed where the passage stood"}


def source_changes_of(*, workspace: Workspace, sources: list[dict], texts: dict[str, str] | None = None) -> list[dict]:
    """Each cited document source whose document is gone or whose text no longer reads as the
    passage did at its offsets (a re-index with the same text changes nothing). `texts`: the
    cited documents' current texts when the caller has read them already (`_current_texts`)."""
    texts = _current_texts(workspace, sources) if texts is None else texts
    changes = []
    for s in sources:
        if s.get("url") or not s.get("document_id"):
            continue  # a web result is no document of the workspace
        text = texts.get(s["document_id"])
        change = DELETED if text is None else CHANGED if text[s["start"] : s["end"]] != s["text"] else None
        if change:
            changes.append({"source": s["index"], "document_id": s["document_id"], "title": s["title"], "change": change})
    return changes


def query_runs_note_source_change(*, workspace: Workspace, document_id) -> int:
    """Mark (or clear) every answer of the workspace that cites `document_id`, by comparing what
    it cited with the document's current text. Returns how many answers now have a change."""
    citing = Q(sources__contains=[{"document_id": str(document_id)}])
    digest = Document.objects.filter(workspace=workspace, pk=document_id).values_list("sha256", flat=True).first()
    if digest:  # the same content uploaded again after the cited document was deleted
        citing |= Q(sources__contains=[{"sha256": digest}])
    citing = QueryRun.objects.filter(citing, workspace=workspace)
    changed = 0
    for run in citing.only("pk", "sources", "source_changed_at"):
        changes = source_changes_of(workspace=workspace, sources=run.sources)
        seen = (run.source_changed_at or timezone.now()) if changes else None
        QueryRun.objects.filter(pk=run.pk).update(source_changes=changes, source_changed_at=seen)
        audit_source_change_note(workspace=workspace, query_run_id=run.pk, changes=changes)
        changed += bool(changes)
    return changed


def query_run_reverify(*, workspace: Workspace, actor, run_id, actor_label: str = "") -> QueryRun:
    """Judge an answer's claims again against its sources' current text: a new run, linked to the
    original (`reverifies`), with its own audit record naming the original's."""
    require(actor, "reverify", workspace=workspace)
    original = access(QueryRun, workspace, run_id)
    if original.status != QueryStatus.DONE:
        raise ApplicationError("Only a settled answer can be re-verified; wait for it to finish.")
    if original.insufficient or not original.claims:
        raise ApplicationError("A refusal claims nothing, so there is nothing to re-verify.")
    options = settings_get(workspace=workspace)
    # Every cited document's whole text, read once for the changes and for the sources.
    texts = _current_texts(workspace, original.sources)
    changes = source_changes_of(workspace=workspace, sources=original.sources, texts=texts)
    claims = [Claim(text=c["text"], source=c["source"], quote=c["quote"]) for c in original.claims]
    given = Answer(text=original.answer, claims=tuple(claims), insufficient=False, provider=original.provider)
    retrieval = (original.trust or {}).get("retrieval")
    params = answer_params_for(options)
    gone = frozenset(c["source"] for c in changes if c["change"] == DELETED)
    current = _current_sources(original.sources, texts)
    done = reverify(
        given, current, retrieval=retrieval, params=params, tools=tools_for(workspace, options), gone=gone, question=original.question
    )
    rows = [claim_row(v) for v in done.claims]
    trust, ms = done.trust, done.ms
    user = getattr(actor, "user", None)
    label = actor_label or label_of(actor)
    with transaction.atomic():
        run = QueryRun.objects.create(
            workspace=workspace,
            question=original.question,
            mode=original.mode,
            status=QueryStatus.DONE,
            asked_by=user,
            actor_label=label,
            answer=original.answer,
            partial_answer=original.answer,
            provider=original.provider,
            claims=rows,
            sources=[s | _change_of(s, changes) for s in original.sources],
            grounding=sum(r["faithful"] for r in rows) / len(rows),
            gate=original.gate,
            attempts=done.attempts,
            stages=[
                {"name": "verify", "status": "done", "ms": ms, "detail": f"re-verified against the current text, judged by {done.judge}"}
            ],
            trust=trust_row(trust),
            confidence=trust.confidence,
            risk=trust.risk,
            source_changes=changes,
            source_changed_at=timezone.now() if changes else None,
            reverifies=original,
            duration_ms=int(ms),
        )
        record = audit_record_for_run(workspace=workspace, query_run_id=original.pk)
        audit_record_create(
            workspace=workspace,
            asked_by=user,
            actor_label=label,
            query_run_id=run.pk,
            payload=_payload(run, original, record, options, done.judge),
        )
    return run


def _current_texts(workspace: Workspace, sources: list[dict]) -> dict[str, str]:
    """Each cited document's current text, by the id the answer cites. A document that is gone
    but whose content was uploaded again (the same SHA-256) is that document again."""
    cited = [s for s in sources if s.get("document_id") and not s.get("url")]
    ids = {s["document_id"] for s in cited if _is_uuid(s["document_id"])}
    texts = {str(pk): text for pk, text in Document.objects.filter(workspace=workspace, pk__in=ids).values_list("pk", "text")}
    wanted = {s["sha256"]: s["document_id"] for s in cited if s.get("sha256") and s["document_id"] not in texts}
    for digest, text in Document.objects.filter(workspace=workspace, sha256__in=wanted).values_list("sha256", "text"):
        texts[wanted[digest]] = text
    return texts


def _current_sources(sources: list[dict], texts: dict[str, str]) -> list[Candidate]:
    """The sources as they read now: a document source is the document's whole current text
    (`texts`, so a quote is located wherever it now stands; a deleted document reads as nothing)."""

    def current(s: dict) -> Candidate:
        if s.get("url"):
            return Candidate(
                s["chunk_id"],
                s["document_id"],
                s["title"],
                s["ordinal"],
                s["text"],
                s["start"],
                s["end"],
                None,
                None,
                None,
                None,
                0.0,
                url=s["url"],
            )
        text = texts.get(s["document_id"], "")
        return Candidate(s["chunk_id"], s["document_id"], s["title"], s["ordinal"], text, 0, len(text), None, None, None, None, 0.0)

    return [current(s) for s in sorted(sources, key=lambda s: s["index"])]


def _change_of(source: dict, changes: list[dict]) -> dict:
    change = next((c["change"] for c in changes if c["source"] == source["index"]), None)
    return {"changed": CHANGE_LABELS[change]} if change else {}


def _payload(run: QueryRun, original: QueryRun, record, options, judge: str) -> dict:
    return {
        "recorded_at": timezone.now().isoformat(),
        "question": run.question,
        "mode": run.mode,
        "asked_by": {"user": run.asked_by.get_username() if run.asked_by else None, "label": run.actor_label},
        "reverification_of": {
            "query_run_id": str(original.pk),
            "audit_id": str(record.pk) if record else None,
            "audit_sequence": record.sequence if record else None,
            "audit_hash": record.hash if record else None,
        },
        "settings": {
            "locator_threshold": options.locator_threshold,
            "trust_weights": [options.trust_weight_retrieval, options.trust_weight_agreement, options.trust_weight_grounding],
            "risk_cutoffs": [options.risk_low_cutoff, options.risk_medium_cutoff],
        },
        "stages": {
            "generate": {"provider": run.provider, "insufficient": False, "answer": run.answer, "ms": None},
            "verify": {"claims": run.claims, "ms": run.stages[0]["ms"], "judge": judge},
        },
        "source_changes": run.source_changes,
        "provider_attempts": run.attempts,
        "grounding": run.grounding,
        "trust": run.trust | {"confidence": run.confidence, "risk": run.risk},
        "sources": run.sources,
        "pipeline": run.stages,
        "gate": run.gate,
        "refusal": None,
    }


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
