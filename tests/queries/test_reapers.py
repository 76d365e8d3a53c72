"""The query reaper: a question whose message was lost is sent again; one nobody answered for an
hour fails with a message instead of spinning forever."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from apps.queries.models import QueryRun, QueryStatus
from apps.queries.services import query_run_create, query_runs_reap_queued


def test_lost_questions_are_sent_again_and_abandoned_ones_fail_with_a_message(personas, settings, django_capture_on_commit_callbacks):
    ask = {"workspace": personas.workspace_a, "actor": personas.member}
    fresh, lost, abandoned, done = (query_run_create(**ask, question=f"Question {i}?") for i in range(4))
    now = timezone.now()
    QueryRun.objects.filter(pk=lost.pk).update(created_at=now - timedelta(seconds=settings.QUERY_REQUEUE_QUEUED_AFTER_S + 1))
    QueryRun.objects.filter(pk=abandoned.pk).update(created_at=now - timedelta(seconds=settings.QUERY_GIVE_UP_AFTER_S + 1))
    QueryRun.objects.filter(pk=done.pk).update(status=QueryStatus.DONE, created_at=now - timedelta(hours=2))

    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert query_runs_reap_queued(now=now) == {"requeued": 1, "failed": 1}

    assert len(sent) == 1, "only the lost question is sent again"
    abandoned.refresh_from_db()
    assert abandoned.status == QueryStatus.FAILED
    assert "ask it again" in abandoned.error
    assert QueryRun.objects.get(pk=fresh.pk).status == QueryStatus.QUEUED
    assert QueryRun.objects.get(pk=done.pk).status == QueryStatus.DONE
