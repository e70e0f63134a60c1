"""Jobs on a worker: a run's pre-flight (then queueing the run) and a test drive. The page that asked waits on the
job's row, never on a request thread; errors come back by field, as the form would have shown them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError

from webapp.jobs.models import Job
from webapp.jobs.services import job_claim, job_finish, job_progress

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]


def _version_for(job: Job):
    """The version, if its user may still see it (a team change between the click and the job refuses it)."""
    from webapp.catalog.models import EnvironmentVersion
    from webapp.catalog.selectors import environment_list

    version = (
        EnvironmentVersion.objects.filter(pk=job.params.get("version"), environment__in=environment_list(
            user=job.created_by)).select_related("environment").first()
    )  # fmt: skip
    if version is None:
        raise ValidationError({"env_version": "that environment version no longer exists or is no longer yours"})
    return version


def run_create_job(job: Job, progress: Progress) -> dict[str, Any]:
    from webapp.runs.services import run_create
    from workers.worker.preflight import preflight

    p = job.params
    version = _version_for(job)
    mixture = _mixture_for(job)
    preflight(version=version, model_name=p["model_name"], config=p["config"], provider=p["provider"],
              replicas=p.get("replicas"), team=job.team, progress=progress,
              also=[v for v, _ in mixture])  # fmt: skip
    progress("queueing the run", 0.95)
    run = run_create(
        team=job.team, user=job.created_by, env_version=version, model_name=p["model_name"],
        prompts=p.get("prompts") or [], config=p["config"], replicas=p.get("replicas"), provider=p["provider"],
        tags=p.get("tags") or [], trust_override_reason=p.get("trust_override_reason", ""),
        transcript_policy=p.get("transcript_policy") or "all", mixture=mixture, env_weight=p.get("env_weight", 1.0),
    )  # fmt: skip
    return {"run": run.pk, "url": run.get_absolute_url()}


def _mixture_for(job: Job) -> list:
    """A mixed run's other versions and weights, if its user may still see them."""
    from webapp.catalog.models import EnvironmentVersion
    from webapp.catalog.selectors import environment_list

    pairs = job.params.get("mixture") or []
    visible = EnvironmentVersion.objects.filter(environment__in=environment_list(user=job.created_by))
    found = visible.select_related("environment").in_bulk([pk for pk, _ in pairs])
    if len(found) != len({pk for pk, _ in pairs}):
        raise ValidationError({"mixture": "an environment of the mixture no longer exists or is no longer yours"})
    return [(found[pk], weight) for pk, weight in pairs]


TESTDRIVE_PHASES = {"provisioning": 0.2, "reset": 0.6, "step": 0.8, "tearing down": 0.95}


def testdrive_job(job: Job, progress: Progress) -> dict[str, Any]:
    from webapp.catalog.services import version_testdrive

    p = job.params
    version = _version_for(job)

    def phase(message: str) -> None:
        fraction = next((f for prefix, f in TESTDRIVE_PHASES.items() if message.startswith(prefix)), None)
        progress(message, fraction if fraction is not None else 0.3)

    drive = version_testdrive(version=version, tool=p["tool"], arguments=p.get("arguments") or {},
                              provider_kind=p.get("provider") or None, seed=p.get("seed"),
                              progress=phase)  # fmt: skip
    return {"drive": drive.as_dict()}


KINDS: dict[str, Callable[[Job, Progress], dict[str, Any]]] = {
    Job.Kind.RUN_CREATE: run_create_job,
    Job.Kind.TESTDRIVE: testdrive_job,
}


def run_job(job_id: int) -> str:
    job = job_claim(job_id)
    if job is None:
        return "not queued"  # queued twice, or already finished

    def progress(message: str, fraction: float) -> None:
        job_progress(job.pk, message, fraction)

    try:
        result = KINDS[job.kind](job, progress)
    except ValidationError as exc:
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
        job_finish(job.pk, errors=errors)
        return Job.Status.FAILED
    except Exception as exc:
        log.exception("job %s failed", job.pk)
        job_finish(job.pk, errors={"__all__": [f"{type(exc).__name__}: {exc}"[:2000]]})
        return Job.Status.FAILED
    job_finish(job.pk, result=result)
    return Job.Status.SUCCEEDED
