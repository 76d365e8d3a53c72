from __future__ import annotations

from django.db.models import QuerySet

from apps.evals.chart import sweep_chart
from apps.evals.models import EvalQuestion, EvalResult, EvalRun, EvalSet, EvalStatus
from apps.evals.sweep import (
    ANSWERABLE,
    UNANSWERABLE,
    Outcome,
    answered_at,
    crag_suggestion,
    evaluation_metrics,
    evaluation_sweep,
    recommend_middle,
)
from apps.workspaces.models import Workspace
from apps.workspaces.tenancy import access

SWEEP = [round(0.02 * i, 2) for i in range(51)]


def eval_set_list(*, workspace: Workspace) -> QuerySet[EvalSet]:
    return EvalSet.objects.filter(workspace=workspace).select_related("created_by")


def access_eval_set(workspace: Workspace, set_id) -> EvalSet:
    return access(EvalSet, workspace, set_id, EvalSet.objects.select_related("created_by"))


def eval_question_list(*, workspace: Workspace, eval_set: EvalSet) -> QuerySet[EvalQuestion]:
    return EvalQuestion.objects.filter(workspace=workspace, eval_set=eval_set).order_by("ordinal")


def eval_run_list(*, workspace: Workspace, eval_set: EvalSet | None = None) -> QuerySet[EvalRun]:
    runs = EvalRun.objects.filter(workspace=workspace).select_related("eval_set", "started_by")
    return runs if eval_set is None else runs.filter(eval_set=eval_set)


def access_eval_run(workspace: Workspace, run_id) -> EvalRun:
    return access(EvalRun, workspace, run_id, EvalRun.objects.select_related("eval_set", "started_by"))


def eval_result_list(*, workspace: Workspace, run: EvalRun) -> QuerySet[EvalResult]:
    return EvalResult.objects.filter(workspace=workspace, run=run).select_related("question").order_by("ordinal")


def eval_run_outcomes(run: EvalRun) -> list[Outcome]:
    return [_outcome(r) for r in eval_result_list(workspace=run.workspace, run=run)]


def _outcome(result: EvalResult) -> Outcome:
    verified, naive = result.verified, result.naive
    return Outcome(
        kind=ANSWERABLE if result.question.answerable else UNANSWERABLE,
        answered_open=verified["answered"],
        top_score=result.top_score,
        correct_open=bool(verified["correct"]),
        answered_naive=naive["answered"],
        correct_naive=bool(naive["correct"]),
        graded=verified["correct"] is not None,
        risk_open=verified["risk"],
        risk_naive=naive["risk"],
        retrieval_score=result.retrieval_score,
    )


def eval_run_report(run: EvalRun) -> dict:
    """The run's metrics side by side (verified at the workspace threshold it ran with, and
    naive), the sweep computed from the recorded scores, and the thresholds it recommends.
    The recommendation needs a finished run with both answerable and unanswerable questions."""
    outcomes = eval_run_outcomes(run)
    rows = evaluation_sweep(outcomes, SWEEP)
    kinds = {o.kind for o in outcomes}
    recommended = {"gate_threshold": None, "crag_lower": None, "crag_upper": None}
    if run.status == EvalStatus.DONE and kinds == {ANSWERABLE, UNANSWERABLE}:
        # Below the CRAG lower threshold the run measured nothing (those passages were dropped
        # before the gate), so the recommendation is taken from the thresholds above it.
        gate = recommend_middle([r for r in rows if r["threshold"] >= (run.crag_lower or 0.0)] or rows)
        recommended = {"gate_threshold": gate, **crag_suggestion(outcomes, gate=gate)}
    return {
        "n": len(outcomes),
        "n_answerable": sum(o.kind == ANSWERABLE for o in outcomes),
        "n_unanswerable": sum(o.kind != ANSWERABLE for o in outcomes),
        "threshold": run.gate_threshold,
        "verified": evaluation_metrics(outcomes, threshold=run.gate_threshold),
        "naive": evaluation_metrics(outcomes, threshold=None),
        "sweep": rows,
        "recommended": recommended,
    }


def eval_result_rows(run: EvalRun) -> list[dict]:
    """Each question with its two answers, and the verified decision at the run's threshold."""
    return [
        {"result": r, "verified_answered": answered_at(_outcome(r), run.gate_threshold)}
        for r in eval_result_list(workspace=run.workspace, run=run)
    ]


def eval_run_chart(run: EvalRun, report: dict) -> dict:
    return sweep_chart(report["sweep"], current=run.gate_threshold, recommended=report["recommended"]["gate_threshold"])
