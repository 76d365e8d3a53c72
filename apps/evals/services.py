"""Evaluation sets and runs: questions with known answerability asked through the real pipeline,
in verified mode with the gate opened and in naive mode, so that any threshold can be read
afterwards from the recorded scores (see gate.py)."""

from __future__ import annotations

from pathlib import PurePath

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core.errors import ApplicationError
from apps.core.events import event_record
from apps.core.guard import clean_text, safe_filename
from apps.evals.formats import EvalFileError, parse_eval_file
from apps.evals.models import EvalQuestion, EvalResult, EvalRun, EvalSet, EvalStatus
from apps.evals.selectors import access_eval_run, access_eval_set, eval_run_report
from apps.evals.sweep import contains_gold, normalise
from apps.queries.models import QueryMode, QueryRun
from apps.queries.services import query_answer
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import settings_get
from apps.workspaces.services import settings_update
from apps.workspaces.tenancy import require

# --- asking: shared with bench_gate ---------------------------------------------------------


def question_ask_both(*, workspace: Workspace, question: str, actor_label: str) -> tuple[QueryRun, QueryRun]:
    """One question through the real pipeline, in this process, as evaluation traffic: verified
    mode with the gate opened (threshold 0: its top score tells the outcome at any threshold)
    and naive mode."""
    common = {"workspace": workspace, "actor": None, "question": question, "actor_label": actor_label, "evaluation": True}
    opened = query_answer(**common, threshold_override=0.0)
    naive = query_answer(**common, mode=QueryMode.NAIVE)
    return opened, naive


def answer_correct(run: QueryRun, *, expected_answers: list[str], expected_source: str) -> bool | None:
    """Whether an answer holds an expected answer (SQuAD-normalised) and cites the expected
    source (its title or file name); None when there is nothing to check it against."""
    if not expected_answers and not expected_source:
        return None
    if run.insufficient:
        return False
    if expected_answers and not contains_gold(run.answer, expected_answers):
        return False
    return not expected_source or _cites(run, expected_source)


def _cites(run: QueryRun, expected_source: str) -> bool:
    wanted = normalise(PurePath(expected_source).stem)
    cited = {claim.get("source") for claim in run.claims}
    titles = [normalise(s.get("title") or "") for s in run.sources if s.get("index") in cited]
    return any(wanted and (wanted == title or wanted in title) for title in titles)


# --- evaluation sets --------------------------------------------------------------------------


def eval_set_create(*, workspace: Workspace, actor, filename: str, data: bytes, name: str = "") -> EvalSet:
    """Parse a JSONL / CSV / SQuAD 2.0 file into a set: all of it or, on the first bad line,
    nothing (the ApplicationError names the line or JSON path and the field). The name, the
    file's name and every text in the file are held to the one text guard."""
    require(actor, "contribute", workspace=workspace)
    filename = safe_filename(filename, field="file")
    name = clean_text(name, field="name", max_length=200, one_line=True).strip() or PurePath(filename).stem[:200]
    if len(data) > settings.UPLOAD_MAX_BYTES:
        raise ApplicationError(f"“{filename}” is over the upload limit.", status=413, code="too_large", field="file")
    try:
        kind, questions = parse_eval_file(filename, data, max_question_chars=settings.QUESTION_MAX_CHARS)
    except EvalFileError as exc:
        raise ApplicationError(f"“{filename}”: {exc}", field="file") from None
    user = actor.user if actor is not None else None
    with transaction.atomic():
        eval_set = EvalSet.objects.create(
            workspace=workspace,
            name=name,
            source_format=kind,
            created_by=user,
            question_count=len(questions),
            answerable_count=sum(q.answerable for q in questions),
        )
        EvalQuestion.objects.bulk_create(
            EvalQuestion(
                workspace=workspace,
                eval_set=eval_set,
                ordinal=number,
                question=q.question,
                answerable=q.answerable,
                expected_answers=q.expected_answers,
                expected_source=q.expected_source,
            )
            for number, q in enumerate(questions, start=1)
        )
        data = {"set": str(eval_set.pk), "name": eval_set.name, "questions": len(questions), "format": kind}
        event_record(workspace=workspace, actor=actor, action="evaluation.set_create", data=data)
    return eval_set


def eval_set_delete(*, workspace: Workspace, actor, set_id) -> None:
    """The set with its questions, runs and results (the answers stay in the audit trail)."""
    require(actor, "contribute", workspace=workspace)
    with transaction.atomic():
        eval_set = access_eval_set(workspace, set_id)
        data = {"set": str(eval_set.pk), "name": eval_set.name}
        eval_set.delete()
        event_record(workspace=workspace, actor=actor, action="evaluation.set_delete", data=data)


# --- evaluation runs --------------------------------------------------------------------------


def eval_run_create(*, workspace: Workspace, actor, set_id, enqueue: bool = True) -> EvalRun:
    """A queued run of the set, with the workspace's thresholds of now; a worker answers it
    once the transaction commits (or the caller does, with enqueue=False)."""
    from apps.evals.tasks import run_evaluation

    require(actor, "contribute", workspace=workspace)
    user = actor.user if actor is not None else None
    options = settings_get(workspace=workspace)
    with transaction.atomic():
        eval_set = access_eval_set(workspace, set_id)
        run = EvalRun.objects.create(
            workspace=workspace,
            eval_set=eval_set,
            started_by=user,
            progress_total=eval_set.question_count,
            gate_threshold=options.gate_threshold,
            crag_lower=options.crag_lower,
            crag_upper=options.crag_upper,
        )
        data = {"run": str(run.pk), "set": str(eval_set.pk), "name": eval_set.name}
        event_record(workspace=workspace, actor=actor, action="evaluation.run_start", data=data)
        if enqueue:
            transaction.on_commit(lambda: run_evaluation.delay(str(workspace.pk), str(run.pk)))
    return run


def eval_run_execute(*, workspace: Workspace, run_id, on_progress=None) -> EvalRun | None:
    """Claim a queued run and ask each of its questions both ways, saving each result and the
    progress as it goes. A run already claimed elsewhere is left alone (None)."""
    claimed = EvalRun.objects.filter(workspace=workspace, pk=run_id, status=EvalStatus.QUEUED).update(status=EvalStatus.RUNNING)
    if not claimed:
        return None
    run = EvalRun.objects.select_related("eval_set").get(workspace=workspace, pk=run_id)
    label = f"evaluation: {run.eval_set.name}"[:200]
    for done, question in enumerate(run.eval_set.questions.order_by("ordinal"), start=1):
        opened, naive = question_ask_both(workspace=workspace, question=question.question, actor_label=label)
        EvalResult.objects.create(
            workspace=workspace,
            run=run,
            question=question,
            ordinal=question.ordinal,
            top_score=opened.gate.get("top_score"),
            retrieval_score=max((s.get("rerank_score") or 0.0 for s in naive.sources), default=None),
            verified=_summary(opened, question),
            naive=_summary(naive, question),
        )
        EvalRun.objects.filter(pk=run.pk).update(progress_done=done)
        if on_progress:
            on_progress(done, run.progress_total)
    EvalRun.objects.filter(pk=run.pk).update(status=EvalStatus.DONE, finished_at=timezone.now())
    run.refresh_from_db()
    return run


def _summary(run: QueryRun, question: EvalQuestion) -> dict:
    return {
        "run_id": str(run.pk),
        "answered": not run.insufficient,
        "correct": answer_correct(run, expected_answers=question.expected_answers, expected_source=question.expected_source),
        "answer": run.answer,
        "risk": run.risk,
        "confidence": run.confidence,
        "verdicts": [c["verdict"] for c in run.claims],
        "gate": run.gate,
    }


def eval_run_mark_failed(*, workspace: Workspace, run_id, message: str) -> None:
    EvalRun.objects.filter(workspace=workspace, pk=run_id).exclude(status=EvalStatus.DONE).update(
        status=EvalStatus.FAILED, error=message, finished_at=timezone.now()
    )


def eval_run_apply(*, workspace: Workspace, actor, run_id) -> dict:
    """Apply what a finished run recommends — gate threshold, CRAG lower and upper — as one
    audited settings change (owners and admins only)."""
    require(actor, "apply_evaluation", workspace=workspace)
    run = access_eval_run(workspace, run_id)
    if run.status != EvalStatus.DONE:
        raise ApplicationError("Only a finished evaluation run has a recommendation to apply.", status=409, code="not_finished")
    recommended = eval_run_report(run)["recommended"]
    values = {name: value for name, value in recommended.items() if value is not None}
    if not values:
        message = "This run recommends nothing: that needs both answerable and unanswerable questions."
        raise ApplicationError(message, status=409, code="no_recommendation")
    with transaction.atomic():
        settings_update(workspace=workspace, actor=actor, changes=values)
        data = {"run": str(run.pk), "set": run.eval_set.name, "applied": values}
        event_record(workspace=workspace, actor=actor, action="evaluation.apply", data=data)
    return values
