"""Runs and trust checks made while the broker was down are queued later by beat; none is started twice."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from webapp.catalog.models import TrustReport
from webapp.catalog.trust import trust_checks_requeue
from webapp.runs.models import Run
from webapp.runs.services import run_create, runs_requeue
from workers.celery_app import app


def test_a_stranded_queued_run_is_queued_again_once(acme, alice, guess_version):
    stranded = run_create(team=acme, user=alice, env_version=guess_version, start=False)
    recent = run_create(team=acme, user=alice, env_version=guess_version, start=False)
    Run.objects.filter(pk=stranded.pk).update(queued_at=timezone.now() - timedelta(minutes=5))
    try:
        assert runs_requeue(older_than_s=120) == [stranded.pk]
        stranded.refresh_from_db()
        assert stranded.celery_task_id
        assert runs_requeue(older_than_s=120) == []  # it has a task now
        recent.refresh_from_db()
        assert recent.celery_task_id == ""
    finally:
        app.control.revoke(stranded.celery_task_id)


def test_a_pending_trust_report_is_queued_again(guess_version):
    report = TrustReport.objects.create(version=guess_version)
    TrustReport.objects.filter(pk=report.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert trust_checks_requeue(older_than_s=120) == [report.pk]


def test_a_worker_start_requeues_stranded_jobs_runs_and_checks(acme, alice, guess_version):
    from webapp.jobs.models import Job
    from workers.stranded import stranded_requeue

    job = Job.objects.create(team=acme, created_by=alice, kind="testdrive", params={})
    report = TrustReport.objects.create(version=guess_version)
    finished = Job.objects.create(team=acme, created_by=alice, kind="testdrive", status="succeeded")
    queued = stranded_requeue(older_than_s=0)  # what a worker does as soon as it is ready
    assert queued["jobs"] == [job.pk] and finished.pk not in queued["jobs"]
    assert queued["trust_reports"] == [report.pk]
