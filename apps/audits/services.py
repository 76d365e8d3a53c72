from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from django.db import transaction
from django.db.models import F
from django.db.models.functions import JSONObject
from django.utils import timezone

from apps.audits.models import GENESIS_HASH, AuditEvent, AuditRecord, SourceChange, record_hash
from apps.audits.selectors import AuditFilters, audit_record_list
from apps.core.errors import ApplicationError
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.tenancy import KeyMembership, actor_label, require


def audit_record_create(*, workspace: Workspace, asked_by, actor_label: str, query_run_id, payload: dict) -> AuditRecord:
    """Append one record to the workspace's hash chain.

    The workspace row is locked so concurrent answers in one workspace append
    one after another and the chain never forks.
    """
    payload = json.loads(json.dumps(payload, default=str))  # exactly what jsonb will give back
    with transaction.atomic():
        Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
        last = AuditRecord.objects.filter(workspace=workspace).order_by("-sequence").values("sequence", "hash").first()
        sequence = 1 if last is None else last["sequence"] + 1
        prev_hash = GENESIS_HASH if last is None else last["hash"]
        fields = {"sequence": sequence, "query_run_id": query_run_id, "actor_label": actor_label, "payload": payload}
        digest = record_hash(prev_hash=prev_hash, workspace_id=workspace.pk, **fields)
        return AuditRecord.objects.create(workspace=workspace, actor=asked_by, prev_hash=prev_hash, hash=digest, **fields)


def audit_source_change_note(*, workspace: Workspace, query_run_id, changes: list[dict]) -> None:
    """Record that the answer `query_run_id` now cites changed sources (or, with no changes, no
    longer does), for the history's "source changed" filter."""
    if not changes:
        SourceChange.objects.filter(workspace=workspace, query_run_id=query_run_id).delete()
        return
    SourceChange.objects.update_or_create(
        workspace=workspace,
        query_run_id=query_run_id,
        defaults={"changes": changes},
        create_defaults={"changes": changes, "seen_at": timezone.now()},
    )


def audit_event_record(*, workspace: Workspace, actor: Membership | KeyMembership | None, action: str, data: dict) -> AuditEvent:
    """One admin action (every app raises it through `apps.core.events.event_record`). Done
    through an API key, the event has no user and `data["actor_label"]` names the key
    (`key:<prefix> (<name>)`); from a management command, `actor` is None."""
    if isinstance(actor, KeyMembership):
        data = {**data, "actor_label": actor_label(actor)}
    user = actor.user if actor is not None else None
    return AuditEvent.objects.create(workspace=workspace, actor=user, action=action, data=data)


EXPORT_FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
EXPORT_COLUMNS = (
    "sequence",
    "recorded_at",
    "asked_by",
    "mode",
    "question",
    "answer",
    "refused",
    "gate_threshold",
    "gate_top_score",
    "risk",
    "confidence",
    "retrieval",
    "agreement",
    "grounding",
    "claims",
    "verdicts",
    "provider",
    "duration_ms",
    "query_run_id",
    "hash",
    "prev_hash",
)
_FLUSH_AT = 64 * 1024  # characters per piece handed to the response


def audit_export(*, workspace: Workspace, actor, filters: AuditFilters, fmt: str) -> Iterator[str]:
    """Record that the filtered history is being exported, then return it as text pieces of
    about 64 KB to stream: CSV (one row per answer) or JSON (an array of whole records, hash
    chain included, so a copy can be re-verified elsewhere). Memory stays flat however many
    records match: rows are read through a server-side cursor in chunks."""
    require(actor, "read", workspace=workspace)
    if fmt not in EXPORT_FORMATS:
        raise ApplicationError(f"Unknown export format “{fmt}”; use csv or json.", field="format")
    count = audit_record_list(workspace=workspace, filters=filters).count()
    audit_event_record(
        workspace=workspace, actor=actor, action="audit.export", data={"format": fmt, "records": count, "filters": filters.as_dict()}
    )
    return _csv_pieces(workspace, filters) if fmt == "csv" else _batched(_json_pieces(workspace, filters))


def audit_export_rows(*, workspace: Workspace, filters: AuditFilters) -> Iterator[dict]:
    """One flat dict per matching record (the CSV's columns, EXPORT_COLUMNS), streamed from
    the database 1,000 at a time; of each payload only its summary is read, never the trace."""
    summary = JSONObject(  # one JSON object per row, decoded once; numbers stay numbers
        answer=F("payload__stages__generate__answer"),
        provider=F("payload__stages__generate__provider"),
        gate_threshold=F("payload__gate__threshold"),
        gate_top_score=F("payload__gate__top_score"),
        retrieval=F("payload__trust__retrieval"),
        agreement=F("payload__trust__agreement"),
        grounding=F("payload__trust__grounding"),
        duration_ms=F("payload__duration_ms"),
        verdicts=F("verdicts"),
    )
    columns = ("sequence", "created_at", "actor_label", "mode", "question", "refused", "risk", "confidence")
    records = audit_record_list(workspace=workspace, filters=filters).annotate(summary=summary)
    for row in records.values(*columns, "query_run_id", "hash", "prev_hash", "summary").iterator(chunk_size=1000):
        extra = row.pop("summary")
        verdicts = extra.pop("verdicts") or []
        yield (
            row
            | extra
            | {
                "recorded_at": row.pop("created_at").isoformat(),
                "asked_by": row.pop("actor_label"),
                "claims": len(verdicts),
                "verdicts": ";".join(verdicts),
                "query_run_id": str(row["query_run_id"]),
            }
        )


def _csv_pieces(workspace: Workspace, filters: AuditFilters) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    for row in audit_export_rows(workspace=workspace, filters=filters):
        for column in _TEXT_COLUMNS:
            row[column] = _defused(row[column])
        writer.writerow([row[column] for column in EXPORT_COLUMNS])
        if buffer.tell() >= _FLUSH_AT:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


_TEXT_COLUMNS = ("asked_by", "question", "answer", "provider")


def _defused(value):
    """Text a spreadsheet would run as a formula (=, +, -, @ first) gets an apostrophe in
    front; the JSON export keeps every value exactly."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _json_pieces(workspace: Workspace, filters: AuditFilters) -> Iterator[str]:
    records = audit_record_list(workspace=workspace, filters=filters).defer(None).defer("question_search")
    yield "["
    for i, record in enumerate(records.iterator(chunk_size=200)):
        item = {
            "id": str(record.pk),
            "workspace": str(workspace.pk),
            "sequence": record.sequence,
            "recorded_at": record.created_at.isoformat(),
            "query_run_id": str(record.query_run_id),
            "actor_label": record.actor_label,
            "prev_hash": record.prev_hash,
            "hash": record.hash,
            "payload": record.payload,
        }
        yield ("," if i else "") + "\n" + json.dumps(item, ensure_ascii=False)
    yield "\n]\n"


def _batched(pieces: Iterator[str]) -> Iterator[str]:
    buffer: list[str] = []
    size = 0
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= _FLUSH_AT:
            yield "".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer)
