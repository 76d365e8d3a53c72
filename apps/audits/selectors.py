from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.db.models.fields.json import KT
from django.utils import timezone

from apps.audits.models import GENESIS_HASH, AuditEvent, AuditRecord, SourceChange, record_hash
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access

RISKS = ("low", "medium", "high")
MODES = ("verified", "naive")
VERDICTS = ("supports", "partial", "contradicts", "not_found", "hallucinated_quote", "not_judged", "source_deleted", "unsure")
SORTS = {
    "newest": (F("sequence").desc(),),
    "oldest": (F("sequence").asc(),),
    "confidence": (F("confidence").asc(nulls_last=True), F("sequence").desc()),
    "-confidence": (F("confidence").desc(nulls_last=True), F("sequence").desc()),
}


@dataclass(frozen=True)
class AuditFilters:
    """What the audit history is narrowed to; every field empty means everything, newest first."""

    risk: str = ""  # one of RISKS
    refused: bool | None = None  # True: refusals only; False: answers only
    mode: str = ""  # one of MODES
    verdict: str = ""  # one of VERDICTS: at least one claim got it
    actor: str = ""  # the user name or API key label that asked (any case)
    date_from: dt.date | None = None  # inclusive, in the site's time zone
    date_to: dt.date | None = None  # inclusive
    q: str = ""  # words or part of a word of the question
    source_changed: bool | None = None  # True: answers whose cited documents changed since; False: the others
    sort: str = "newest"  # one of SORTS
    include_evaluation: bool = False  # also the answers that evaluation runs asked for

    def as_dict(self) -> dict:
        """The filters that are set, JSON-ready (for the export's audit event)."""
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        if not self.include_evaluation:
            del values["include_evaluation"]
        return {k: v.isoformat() if isinstance(v, dt.date) else v for k, v in values.items() if v not in ("", None)}


def audit_record_list(*, workspace: Workspace, filters: AuditFilters | None = None) -> QuerySet[AuditRecord]:
    """The workspace's answer records, filtered and sorted, without their payloads (a list
    never needs the whole trace; `.defer(None)` brings it back)."""
    filters = filters or AuditFilters()
    changed = SourceChange.objects.filter(workspace=workspace, query_run_id=OuterRef("query_run_id"))
    records = AuditRecord.objects.filter(workspace=workspace, **_exact(filters)).annotate(
        source_changed=Exists(changed), reverification_of=KT("payload__reverification_of__audit_sequence")
    )
    if filters.source_changed is not None:
        records = records.filter(source_changed=filters.source_changed)
    if not filters.include_evaluation:
        records = records.filter(evaluation=False)
    if filters.verdict:
        records = records.filter(verdicts__contains=[filters.verdict])
    if filters.date_from:
        records = records.filter(created_at__gte=_day_start(filters.date_from))
    if filters.date_to:
        records = records.filter(created_at__lt=_day_start(filters.date_to + dt.timedelta(days=1)))
    if filters.q.strip():
        words = SearchQuery(filters.q, config="english", search_type="websearch")
        records = records.filter(Q(question_search=words) | Q(question__icontains=filters.q.strip()))
    return records.defer("payload", "question_search").order_by(*SORTS.get(filters.sort, SORTS["newest"]))


def _exact(filters: AuditFilters) -> dict:
    exact = {"risk": filters.risk, "mode": filters.mode, "refused": filters.refused, "actor_label__iexact": filters.actor.strip()}
    return {field: value for field, value in exact.items() if value not in ("", None)}


def _day_start(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def access_audit_record(workspace: Workspace, record_id) -> AuditRecord:
    return access(AuditRecord, workspace, record_id, AuditRecord.objects.select_related("actor"))


def audit_record_for_run(*, workspace: Workspace, query_run_id) -> AuditRecord | None:
    return AuditRecord.objects.filter(workspace=workspace, query_run_id=query_run_id).first()


def audit_record_id_for_run(*, workspace: Workspace, query_run_id):
    """The id of a run's audit record (None before it is recorded), without reading its payload."""
    return AuditRecord.objects.filter(workspace=workspace, query_run_id=query_run_id).values_list("pk", flat=True).first()


def audit_event_list(*, workspace: Workspace, actions: Iterable[str] | None = None) -> QuerySet[AuditEvent]:
    """Admin actions, newest first; `actions` names them exactly or by prefix ending in a dot
    ("settings." is every settings change)."""
    events = AuditEvent.objects.filter(workspace=workspace).select_related("actor").order_by("-created_at")
    if actions is not None:
        wanted = Q(pk__in=[])
        for action in actions:
            wanted |= Q(action__startswith=action) if action.endswith(".") else Q(action=action)
        events = events.filter(wanted)
    return events


@dataclass(frozen=True)
class ChainCheck:
    records: int
    intact: bool
    first_broken_sequence: int | None
    reason: str = ""


def audit_chain_check(*, workspace: Workspace) -> ChainCheck:
    """Recompute every hash of the workspace's chain in order; the first record that does
    not follow from its predecessor is where the chain breaks, and why."""
    prev_hash = GENESIS_HASH
    count = 0
    records = AuditRecord.objects.filter(workspace=workspace).order_by("sequence")
    for record in records.only("sequence", "query_run_id", "actor_label", "payload", "prev_hash", "hash").iterator(chunk_size=500):
        count += 1
        reason = _broken_link(record, workspace.pk, prev_hash, expected_sequence=count)
        if reason:
            return ChainCheck(count, False, record.sequence, reason)
        prev_hash = record.hash
    return ChainCheck(count, True, None)


def audit_record_link_ok(record: AuditRecord) -> bool:
    """Whether this one record still hashes to its stored hash and follows its predecessor."""
    before = AuditRecord.objects.filter(workspace_id=record.workspace_id, sequence=record.sequence - 1).values_list("hash", flat=True)
    prev_hash = GENESIS_HASH if record.sequence == 1 else before.first()
    return not _broken_link(record, record.workspace_id, prev_hash, expected_sequence=record.sequence)


def _broken_link(record: AuditRecord, workspace_id, prev_hash: str | None, *, expected_sequence: int) -> str:
    if record.sequence != expected_sequence:
        return f"sequence {record.sequence} where {expected_sequence} was expected: a record is missing or was inserted"
    if record.prev_hash != prev_hash:
        return "its previous-hash does not match the record before it: the chain was cut or re-ordered"
    expected = record_hash(
        prev_hash=record.prev_hash,
        sequence=record.sequence,
        workspace_id=workspace_id,
        query_run_id=record.query_run_id,
        actor_label=record.actor_label,
        payload=record.payload,
    )
    if record.hash != expected:
        return "its content no longer matches its hash: the record was altered"
    return ""


def claim_passages(*, claims: list[dict], sources: list[dict]) -> list[dict]:
    """Each claim (as stored on a run or in its audit record) numbered from 1, with the passage
    it cites split around its located quote — `before`, `quote`, `after` — so a page can
    highlight the quote where it stands. `passage` is None when the claim cites no source
    shown; `quote` is empty when the quote was not located in it."""
    by_index = {source.get("index"): source for source in sources}
    return [
        claim | {"number": number, "passage": _passage(claim, by_index.get(claim.get("source")))} for number, claim in enumerate(claims, 1)
    ]


def _passage(claim: dict, source: dict | None) -> dict | None:
    if source is None:
        return None
    text, base = source.get("text") or "", source.get("start") or 0
    passage = {"source": source, "before": text, "quote": "", "after": ""}
    if claim.get("start") is None or claim.get("end") is None:
        return passage
    start, end = claim["start"] - base, claim["end"] - base  # claims carry offsets in the whole document
    if 0 <= start < end <= len(text):
        passage |= {"before": text[:start], "quote": text[start:end], "after": text[end:]}
    return passage
