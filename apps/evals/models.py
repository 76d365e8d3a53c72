from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.workspaces.models import TenantModel


class EvalFormat(models.TextChoices):
    JSONL = "jsonl", "JSONL"
    CSV = "csv", "CSV"
    SQUAD = "squad", "SQuAD 2.0"


class EvalSet(TenantModel):
    """Questions with known answerability, to measure how a workspace answers and refuses."""

    name = models.CharField(max_length=200)
    source_format = models.CharField(max_length=10, choices=EvalFormat.choices)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    question_count = models.PositiveIntegerField(default=0)
    answerable_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="evalset_ws_created")]

    def __str__(self) -> str:
        return self.name

    @property
    def unanswerable_count(self) -> int:
        return self.question_count - self.answerable_count


class EvalQuestion(TenantModel):
    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="questions")
    ordinal = models.PositiveIntegerField()  # 1-based, the order of the file
    question = models.TextField()
    answerable = models.BooleanField()
    expected_answers = models.JSONField(default=list, blank=True)  # any one of them, normalised, counts as correct
    expected_source = models.CharField(max_length=300, blank=True)  # a document title or file name

    class Meta:
        ordering = ["eval_set", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["workspace", "eval_set", "ordinal"], name="evalquestion_unique_ordinal")]


class EvalStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class EvalRun(TenantModel):
    """Every question of a set asked in verified mode (gate opened) and in naive mode."""

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=10, choices=EvalStatus.choices, default=EvalStatus.QUEUED)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    # The workspace's settings when the run started: its metrics are read at this gate threshold.
    gate_threshold = models.FloatField(null=True, blank=True)
    crag_lower = models.FloatField(null=True, blank=True)
    crag_upper = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="evalrun_ws_created")]

    @property
    def settled(self) -> bool:
        return self.status in (EvalStatus.DONE, EvalStatus.FAILED)

    @property
    def progress_percent(self) -> int:
        return round(100 * self.progress_done / self.progress_total) if self.progress_total else 0


class EvalResult(TenantModel):
    """One question's two answers. `verified` and `naive` each hold what the answer page would
    show in brief: {"run_id", "answered", "correct", "answer", "risk", "confidence", "verdicts", "gate"}."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    question = models.ForeignKey(EvalQuestion, on_delete=models.CASCADE, related_name="+")
    ordinal = models.PositiveIntegerField()
    # The best relevance the gate saw (after correction; null when nothing was left) and the
    # best reranked relevance before correction: any gate or CRAG threshold is read from them.
    top_score = models.FloatField(null=True, blank=True)
    retrieval_score = models.FloatField(null=True, blank=True)
    verified = models.JSONField(default=dict)
    naive = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["workspace", "run", "question"], name="evalresult_unique_question")]
