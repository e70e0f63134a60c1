"""Celery tasks: thin wrappers that take ids and call the code that does the work. The web sends them by name
(webapp.core.work_queue); their names are a contract with work already queued and with beat's schedule.

Importing this module (the worker does at start) also connects the worker's signal handlers: its heartbeat, its
standby processes and the requeue of work stranded while no worker could take it."""

from __future__ import annotations

import logging

from celery.signals import worker_ready

from webapp.celery_app import app
from workers.worker import heartbeat, standby  # noqa: F401 (signal handlers)

log = logging.getLogger(__name__)


# acks_late stays off: a lost worker's run is failed by the reaper ("worker lost") rather than re-delivered and
# started twice; executing a run (or an evaluation) also refuses one that is no longer queued.
@app.task(name="workers.execute_run", ignore_result=True, acks_late=False)
def execute_run(run_id: int) -> str:
    from workers.worker.execution import execute
    from workers.worker.runs import RunExecution
    from workers.worker.slurm import SlurmRunExecution, for_slurm

    return execute(SlurmRunExecution(run_id) if for_slurm(run_id) else RunExecution(run_id))


@app.task(name="workers.execute_evaluation", ignore_result=True, acks_late=False)
def execute_evaluation(evaluation_id: int) -> str:
    from workers.worker.evaluations import EvaluationExecution
    from workers.worker.execution import execute

    return execute(EvaluationExecution(evaluation_id))


@app.task(name="workers.reap_lost_runs", ignore_result=True)
def reap_lost_runs() -> dict[str, list[int]]:
    """Runs and evaluations whose worker is gone, jobs left running by one, and external runs whose script stopped
    reporting (beat, every 10 s)."""
    from django.conf import settings

    from webapp.jobs.services import jobs_lost_fail
    from webapp.runs.external import external_runs_crash
    from workers.worker.reaper import reap_lost

    jobs_lost_fail(older_than_s=settings.TRAINYARD_JOB_LOST_AFTER)
    return {**reap_lost(), "external_crashed": external_runs_crash()}


@app.task(name="workers.run_trust_check", ignore_result=True)
def run_trust_check(report_id: int) -> str:
    from webapp.catalog.models import TrustReport
    from webapp.catalog.trust import trust_check_run

    report = TrustReport.objects.select_related("version").filter(pk=report_id).first()
    if report is None:  # the version was deleted meanwhile
        return "gone"
    if report.state != TrustReport.State.PENDING:  # queued twice (a requeue at start): the first one runs it
        return report.state
    return trust_check_run(report=report).verdict


@app.task(name="workers.requeue_stranded", ignore_result=True)
def requeue_stranded() -> dict[str, list[int]]:
    """Work recorded while the broker was down (beat, every minute)."""
    from webapp.core.work_queue import stranded_requeue

    return stranded_requeue(older_than_s=120)


@app.task(name="workers.deliver_alert", ignore_result=True)
def deliver_alert(delivery_id: int) -> str:
    """One try of an alert's delivery to a webhook or a mailbox (retried later, by beat, when it fails)."""
    from webapp.alerts.delivery import delivery_attempt

    return delivery_attempt(delivery_id)


@app.task(name="workers.watch_stalled_runs", ignore_result=True)
def watch_stalled_runs() -> list[int]:
    """Beat, every minute: alert on running runs that stopped making steps."""
    from webapp.alerts.checks import stalled_runs_check

    return [alert.pk for alert in stalled_runs_check()]


@app.task(name="workers.run_job", ignore_result=True)
def run_job(job_id: int) -> str:
    from workers.worker.jobs import run_job as run

    return run(job_id)


@worker_ready.connect
def _requeue_on_start(sender, **kwargs) -> None:
    """Work recorded while no worker could take it (queued with the broker down, as on a first start) is queued
    again as soon as a worker is ready, rather than at beat's next minute."""
    from webapp.core.work_queue import stranded_requeue

    try:
        queued = stranded_requeue(older_than_s=0)
    except Exception:
        log.warning("could not requeue stranded work at start; beat will", exc_info=True)
        return
    if any(queued.values()):
        log.info("queued stranded work: %s", queued)
