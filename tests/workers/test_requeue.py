"""The one door (webapp.core.work_queue) with the real Redis: work whose message never reached the broker is sent
again, once; work whose message did is never sent twice."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from webapp.catalog.models import TrustReport
from webapp.celery_app import app
from webapp.core.work_queue import stranded_requeue, work_kinds
from webapp.evals.models import Evaluation
from webapp.evals.services import evaluation_create
from webapp.jobs.models import Job
from webapp.runs.models import Run
from webapp.runs.services import run_create


def test_every_kind_of_work_is_registered_with_its_task_and_queue():
    kinds = {name: (kind.task, kind.queue) for name, kind in work_kinds().items()}
    assert kinds == {
        "run": ("workers.execute_run", "gpu"),
        "evaluation": ("workers.execute_evaluation", "gpu"),
        "job": ("workers.run_job", "default"),
        "trust check": ("workers.run_trust_check", "default"),
        "alert delivery": ("workers.deliver_alert", "default"),
    }


def test_an_alert_delivery_whose_message_was_lost_is_sent_again_while_it_is_due(acme, alice, guess_version):
    from webapp.alerts.models import Alert, AlertDelivery

    run = run_create(team=acme, user=alice, env_version=guess_version, start=False)
    alert = Alert.objects.create(run=run, rule_key="reward_collapse", title="Reward collapse", message="m")
    due = AlertDelivery.objects.create(alert=alert, kind="webhook", target="http://127.0.0.1:1/",
                                       next_attempt_at=timezone.now() - timedelta(minutes=2))  # fmt: skip
    AlertDelivery.objects.create(alert=alert, kind="email", target="a@example.com",
                                 next_attempt_at=timezone.now() + timedelta(minutes=5))  # a retry, later  # fmt: skip
    assert stranded_requeue(older_than_s=120)["alert delivery"] == [due.pk]


def test_a_stranded_queued_run_is_queued_again_once(acme, alice, guess_version):
    stranded = run_create(team=acme, user=alice, env_version=guess_version, start=False)
    recent = run_create(team=acme, user=alice, env_version=guess_version, start=False)
    Run.objects.filter(pk=stranded.pk).update(queued_at=timezone.now() - timedelta(minutes=5))
    try:
        assert stranded_requeue(older_than_s=120)["run"] == [stranded.pk]
        stranded.refresh_from_db()
        assert stranded.celery_task_id
        assert stranded_requeue(older_than_s=120)["run"] == []  # it has a task now
        recent.refresh_from_db()
        assert recent.celery_task_id == ""
    finally:
        app.control.revoke(stranded.celery_task_id)


def test_a_worker_start_requeues_stranded_work_of_every_kind(acme, alice, guess_version):
    run = run_create(team=acme, user=alice, env_version=guess_version, start=False)
    job = Job.objects.create(team=acme, created_by=alice, kind="testdrive", params={})
    report = TrustReport.objects.create(version=guess_version)
    finished = Job.objects.create(team=acme, created_by=alice, kind="testdrive", status="succeeded")
    evaluation = evaluation_create(team=acme, user=alice, model_name="tiny-local", versions=[guess_version],
                                   episodes=2, start=False)  # fmt: skip
    queued = stranded_requeue(older_than_s=0)  # what a worker does as soon as it is ready
    try:
        assert queued["job"] == [job.pk] and finished.pk not in queued["job"]
        assert queued["trust check"] == [report.pk]
        assert queued["evaluation"] == [evaluation.pk]
        assert queued["run"] == [run.pk]
        # Each now carries the id of the message the broker took: beat will not send it again.
        assert Job.objects.get(pk=job.pk).task_id and TrustReport.objects.get(pk=report.pk).task_id
        assert Evaluation.objects.get(pk=evaluation.pk).task_id and Run.objects.get(pk=run.pk).celery_task_id
        assert not any(stranded_requeue(older_than_s=0).values())
    finally:  # no worker of a later test takes these messages
        for task_id in [
            Job.objects.get(pk=job.pk).task_id,
            TrustReport.objects.get(pk=report.pk).task_id,
            Evaluation.objects.get(pk=evaluation.pk).task_id,
            Run.objects.get(pk=run.pk).celery_task_id,
        ]:
            app.control.revoke(task_id)
