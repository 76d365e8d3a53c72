from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models.fields.json import KT
from django.db.models.functions import Upper

from apps.workspaces.models import TenantModel

GENESIS_HASH = "0" * 64


def record_hash(*, prev_hash: str, sequence: int, workspace_id, query_run_id, actor_label: str, payload: dict) -> str:
    """SHA-256 of the record as canonical JSON (sorted keys, no spaces, UTF-8): what anyone
    holding a JSON export can recompute to check the chain without this code's database."""
    body = json.dumps(
        {
            "prev_hash": prev_hash,
            "sequence": sequence,
            "workspace": str(workspace_id),
            "query_run": str(query_run_id),
            "actor": actor_label,
            "payload": payload,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def _from_payload(sql: str, output_field: models.Field) -> models.Func:
    """An SQL expression over the payload (written `P`). Each one below yields NULL, never an
    error, for a payload without that key or with an unexpected type: a record must never
    fail to be written because of a column that only serves the filters."""
    return models.Func(models.F("payload"), template=sql.replace("P", "%(expressions)s"), output_field=output_field)


class AuditRecord(TenantModel):
    """One per answer. Append-only: a database trigger refuses UPDATE and DELETE,
    and each record's hash covers its content and the previous record's hash."""

    sequence = models.PositiveBigIntegerField()
    query_run_id = models.UUIDField()
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    actor_label = models.CharField(max_length=200)
    payload = models.JSONField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    # What the history filters and sorts on, computed by the database from the payload when the
    # row is written: the filters never read (or de-TOAST) whole payloads, and nothing has to
    # UPDATE an append-only row to fill them. The hash covers the payload, not these.
    question = models.GeneratedField(expression=KT("payload__question"), output_field=models.TextField(), db_persist=True)
    question_search = models.GeneratedField(
        expression=SearchVector(KT("payload__question"), config="english"), output_field=SearchVectorField(), db_persist=True
    )
    mode = models.GeneratedField(expression=KT("payload__mode"), output_field=models.TextField(), db_persist=True)
    risk = models.GeneratedField(expression=KT("payload__trust__risk"), output_field=models.TextField(), db_persist=True)
    confidence = models.GeneratedField(
        expression=_from_payload(
            "CASE WHEN jsonb_typeof(P #> '{trust,confidence}') = 'number' THEN (P #>> '{trust,confidence}')::double precision END",
            models.FloatField(),
        ),
        output_field=models.FloatField(),
        db_persist=True,
    )
    refused = models.GeneratedField(
        expression=_from_payload("(P #> '{stages,generate,insufficient}') = 'true'::jsonb", models.BooleanField()),
        output_field=models.BooleanField(null=True),
        db_persist=True,
    )
    # Asked by an evaluation run (payload "evaluation": true): the history leaves these out unless asked.
    evaluation = models.GeneratedField(
        expression=_from_payload("COALESCE((P -> 'evaluation') = 'true'::jsonb, false)", models.BooleanField()),
        output_field=models.BooleanField(),
        db_persist=True,
    )
    # Every claim's verdict, e.g. ["supports", "hallucinated_quote"]; `@>` finds a verdict.
    verdicts = models.GeneratedField(
        expression=_from_payload("jsonb_path_query_array(P, '$.stages.verify.claims[*].verdict')", models.JSONField()),
        output_field=models.JSONField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["workspace", "sequence"]
        constraints = [models.UniqueConstraint(fields=["workspace", "sequence"], name="auditrecord_unique_sequence")]
        indexes = [
            models.Index(fields=["workspace", "query_run_id"], name="auditrecord_ws_run"),
            models.Index(fields=["workspace", "created_at"], name="auditrecord_ws_created"),
            # Questions are searched by words (any form: "bridges" finds "bridge") and by any
            # part of a word ("halvor" finds "Halvorsen"); both are indexed.
            GinIndex(fields=["question_search"], name="auditrecord_question_search"),
            GinIndex(OpClass(Upper("question"), name="gin_trgm_ops"), name="auditrecord_question_trgm"),  # for icontains
            GinIndex(fields=["verdicts"], name="auditrecord_verdicts", opclasses=["jsonb_path_ops"]),
        ]


class AuditEvent(TenantModel):
    """An administrative action (membership, settings, keys, documents, exports) in a workspace."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=60)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="auditevent_ws_created")]


class SourceChange(TenantModel):
    """An answer whose cited documents changed since it was recorded (deleted, or re-indexed with
    different text where a cited passage stood). Kept beside the append-only records, which
    never change: the history filters on it, and a re-verification is a new record."""

    query_run_id = models.UUIDField()
    changes = models.JSONField(default=list)  # [{"source", "document_id", "title", "change"}]
    seen_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "query_run_id"], name="sourcechange_unique_run")]
