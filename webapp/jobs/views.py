from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from webapp.jobs.models import Job
from webapp.jobs.selectors import job_get


def _job_or_404(request: HttpRequest, pk: int) -> Job:
    try:
        return job_get(user=request.user, pk=pk)
    except Job.DoesNotExist:
        raise Http404("No such job") from None


def job_payload(job: Job) -> dict:
    return {
        "id": job.pk,
        "kind": job.kind,
        "status": job.status,
        "phase": job.phase,
        "progress": round(job.progress, 3),
        "errors": job.errors,
        "next": job.result.get("url", ""),
        "finished": job.is_finished,
    }


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = _job_or_404(request, pk)
    return render(request, "jobs/job_detail.html", {"job": job, "payload": job_payload(job)})


@login_required
def job_json(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(job_payload(_job_or_404(request, pk)))
