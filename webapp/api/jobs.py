"""/api/v1/jobs: long work asked through the API (adding an environment or a version, a test drive) is a job that a
worker runs; the answer names it, and this says how far it got and what came of it."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from ninja import Router

from webapp.api.auth import token_of
from webapp.api.responses import answers
from webapp.api.schemas import JobOut

router = Router(tags=["jobs"])


def job_out(job) -> dict:
    return {"id": job.pk, "kind": job.kind, "status": job.status, "phase": job.phase, "progress": job.progress,
            "result": job.result or {}, "errors": job.errors or {}, "created_at": job.created_at,
            "finished_at": job.finished_at}  # fmt: skip


@router.get("/jobs/{job_id}", response=answers(JobOut), summary="A job's status, phase and result")
def job_show(request: HttpRequest, job_id: int):
    from webapp.jobs.models import Job

    token = token_of(request)
    job = Job.objects.filter(pk=job_id, created_by=token.user, team_id=token.team_id).first()
    if job is None:
        raise Http404("No such job")
    return job_out(job)
