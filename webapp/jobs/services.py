"""Actions on jobs: create (and queue once the transaction commits), report progress, finish."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from webapp.accounts.models import Team
from webapp.core.work_queue import WorkKind, work_queue
from webapp.jobs.models import Job


def job_create(*, team: Team, user, kind: str, params: dict[str, Any]) -> Job:
    """Record the job and queue it once the transaction commits (a broker that is down loses nothing)."""
    job = Job.objects.create(team=team, created_by=user, kind=kind, params=params, phase="waiting for a worker")
    work_queue("job", job.pk)
    return job


JOB_WORK = WorkKind(
    name="job", task="workers.run_job", queue="default",
    stranded=lambda cutoff: Job.objects.filter(status=Job.Status.QUEUED, task_id="", created_at__lt=cutoff)
    .values_list("pk", flat=True),
    sent=lambda pk, task_id: Job.objects.filter(pk=pk).update(task_id=task_id),
)  # fmt: skip


def job_claim(job_id: int) -> Job | None:
    """Queued -> running, once: a job queued twice runs once."""
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), phase="starting"
    )
    return Job.objects.select_related("team", "created_by").get(pk=job_id) if claimed else None


def job_progress(job_id: int, phase: str, fraction: float) -> None:
    Job.objects.filter(pk=job_id).update(phase=phase[:300], progress=max(0.0, min(1.0, fraction)))


def job_finish(job_id: int, *, result: dict[str, Any] | None = None, errors: dict[str, list[str]] | None = None):
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.FAILED if errors else Job.Status.SUCCEEDED,
        result=result or {},
        errors=errors or {},
        progress=1.0,
        phase="failed" if errors else "done",
        finished_at=timezone.now(),
    )


def jobs_lost_fail(*, older_than_s: float) -> list[int]:
    """Jobs left running by a worker that died: failed, saying so (a job takes a minute or two at most)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    lost = list(Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=cutoff).values_list("pk", flat=True))
    for job_id in lost:
        reason = f"the worker running this job stopped answering ({older_than_s:.0f} s)"
        job_finish(job_id, errors={"__all__": [reason]})
    return lost
