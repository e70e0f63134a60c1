"""Jobs on a worker: a run's pre-flight (then queueing the run) and a test drive. The page that asked waits on the
job's row, never on a request thread; errors come back by field, as the form would have shown them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.urls import reverse

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
    """The run's pre-flight, then the run recorded and queued: the spec the form checked, judged again here."""
    from webapp.runs.services import run_create
    from webapp.runs.spec import RunSpec, run_spec_check
    from workers.worker.preflight import preflight

    spec = RunSpec.from_params(job.params, user=job.created_by)
    checked = run_spec_check(spec, team=job.team, user=job.created_by)
    preflight(checked, team=job.team, progress=progress)
    progress("queueing the run", 0.95)
    run = run_create(team=job.team, user=job.created_by, spec=spec)
    return {"run": run.pk, "url": run.get_absolute_url()}


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


def env_add_job(job: Job, progress: Progress) -> dict[str, Any]:
    """An environment added through the API: fetched, installed, started and described on a worker (minutes for a
    git repository with requirements), never on a request thread."""
    from webapp.catalog.services import environment_create

    environment = environment_create(team=job.team, user=job.created_by, **job.params,
                                     progress=lambda message: progress(message, 0.5))  # fmt: skip
    version = environment.versions.get()
    return {"environment": environment.pk, "version": version.pk, "slug": environment.slug,
            "url": reverse("catalog:environment-detail", args=[environment.pk])}  # fmt: skip


def version_add_job(job: Job, progress: Progress) -> dict[str, Any]:
    """A new version of one of the team's environments, added through the API (inspected on a worker)."""
    from webapp.catalog.models import Environment
    from webapp.catalog.services import version_add

    params = dict(job.params)
    environment = Environment.objects.filter(pk=params.pop("environment"), team=job.team).first()
    if environment is None:
        raise ValidationError({"environment": "that environment no longer exists or is no longer the team's"})
    version = version_add(environment=environment, user=job.created_by, **params,
                          progress=lambda message: progress(message, 0.5))  # fmt: skip
    return {"environment": environment.pk, "version": version.pk, "label": version.label, "slug": environment.slug,
            "url": reverse("catalog:environment-detail", args=[environment.pk])}  # fmt: skip


def catalog_import_job(job: Job, progress: Progress) -> dict[str, Any]:
    """Environments from an OpenEnv catalog (a git repository read, then each chosen card fetched, started and
    described: minutes), or a check of a catalog source for updates (`check`: a fetch and OpenEnv's comparison,
    kept on the source for its environments' pages)."""
    from django.utils import timezone

    from webapp.catalog.catalog_import import catalog_import, catalog_read, catalog_updates
    from webapp.catalog.models import CatalogSource

    p = dict(job.params)
    if p.get("source"):
        source = CatalogSource.objects.filter(pk=p["source"], team=job.team).first()
        if source is None:
            raise ValidationError({"catalog": "that catalog source no longer exists or is no longer the team's"})
        back = p.get("back") or reverse("catalog:environment-list")
        if p.get("check"):
            progress("reading the catalog again", 0.2)
            check = catalog_updates(source=source, user=job.created_by)
            source.last_check = {**check.as_dict(), "checked_at": timezone.now().isoformat()}
            source.save(update_fields=["last_check"])
            return {**check.as_dict(), "url": back}
        progress("reading the catalog", 0.05)
        read = catalog_read(source=source.fetch_url, ref=source.ref, root=source.root, publisher=source.publisher,
                            repository_uri="" if source.stand_in_identity else source.repository_uri)  # fmt: skip
    else:
        progress("reading the catalog", 0.05)
        read = catalog_read(source=p.get("catalog", ""), ref=p.get("ref", ""), root=p.get("root") or "envs")
        back = reverse("catalog:environment-list")
    outcomes = catalog_import(team=job.team, user=job.created_by, read=read, only=p.get("only") or None,
                              progress=progress)  # fmt: skip
    failed = [o for o in outcomes if o.status == "failed"]
    if failed and len(failed) == len(outcomes):
        raise ValidationError({"catalog": [f"{o.name}: {o.error}" for o in failed]})
    return {"environments": [o.as_dict() for o in outcomes], "url": back}


KINDS: dict[str, Callable[[Job, Progress], dict[str, Any]]] = {
    Job.Kind.RUN_CREATE: run_create_job,
    Job.Kind.TESTDRIVE: testdrive_job,
    Job.Kind.ENV_ADD: env_add_job,
    Job.Kind.VERSION_ADD: version_add_job,
    Job.Kind.CATALOG_IMPORT: catalog_import_job,
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
