from __future__ import annotations

from django.db.models import QuerySet

from apps.core.tenancy import access
from apps.queries.models import QueryRun
from apps.workspaces.models import Workspace


def query_run_list(*, workspace: Workspace, include_evaluation: bool = False) -> QuerySet[QueryRun]:
    runs = QueryRun.objects.filter(workspace=workspace).select_related("asked_by")
    return runs if include_evaluation else runs.filter(evaluation=False)


def access_query_run(workspace: Workspace, run_id) -> QueryRun:
    return access(QueryRun, workspace, run_id, QueryRun.objects.select_related("asked_by"))


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
