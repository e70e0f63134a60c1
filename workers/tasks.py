"""Celery tasks: thin wrappers that take ids and call the code that does the work."""

from __future__ import annotations

from workers.celery_app import app


# acks_late stays off: a lost worker's run is failed by the reaper ("worker lost") rather than re-delivered and
# started twice; execute_run also refuses a run that is no longer queued.
@app.task(name="workers.execute_run", ignore_result=True, acks_late=False)
def execute_run(run_id: int) -> str:
    from workers.execution import execute_run as execute

    return execute(run_id)


@app.task(name="workers.execute_evaluation", ignore_result=True, acks_late=False)
def execute_evaluation(evaluation_id: int) -> str:
    from workers.evaluation import execute_evaluation as execute

    return execute(evaluation_id)


@app.task(name="workers.reap_lost_runs", ignore_result=True)
def reap_lost_runs() -> list[int]:
    from django.conf import settings

    from webapp.evals.services import evaluations_lost_fail
    from webapp.jobs.services import jobs_lost_fail
    from workers.reaper import reap_lost_runs as reap

    jobs_lost_fail(older_than_s=settings.TRAINYARD_JOB_LOST_AFTER)
    evaluations_lost_fail(older_than_s=max(30, 2 * settings.TRAINYARD_WORKER_LOST_AFTER))
    return reap()


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
    """Runs and trust checks made while the broker was down."""
    from workers.stranded import stranded_requeue

    return stranded_requeue(older_than_s=120)


@app.task(name="workers.run_job", ignore_result=True)
def run_job(job_id: int) -> str:
    from workers.jobs import run_job as run

    return run(job_id)
