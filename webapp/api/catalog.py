"""/api/v1/environments: the team's environments and those shared with every team, with their versions."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from ninja import Query, Router
from pydantic import Field

from webapp.api.auth import write_required
from webapp.api.jobs import job_out
from webapp.api.pages import PageQuery, page
from webapp.api.presenters import environment_out
from webapp.api.responses import answers
from webapp.api.schemas import (
    EnvironmentIn,
    EnvironmentOut,
    EnvironmentPage,
    InputSchema,
    JobOut,
    TestDriveIn,
    TrustReportOut,
    VersionIn,
    VersionSettingsIn,
)
from webapp.api.scope import team_environments, team_version

router = Router(tags=["environments"])


class EnvironmentFilters(InputSchema):
    search: str = Field("", max_length=100)
    tag: str = Field("", max_length=50)


@router.get("/environments", response=answers(EnvironmentPage), summary="Environments the team may train on")
def environment_list(request: HttpRequest, filters: Query[EnvironmentFilters], paging: Query[PageQuery]):
    rows = team_environments(request, search=filters.search, tag=filters.tag).prefetch_related("versions")
    return page(rows, paging, environment_out)


@router.get("/environments/{environment_id}", response=answers(EnvironmentOut), summary="One environment")
def environment_show(request: HttpRequest, environment_id: int):
    environment = team_environments(request).filter(pk=environment_id).first()
    if environment is None:
        raise Http404("No such environment")
    return environment_out(environment)


@router.get("/environments/{environment_id}/versions/{version_id}/trust", response=answers(list[TrustReportOut]),
            summary="A version's trust reports, newest first")  # fmt: skip
def version_trust(request: HttpRequest, environment_id: int, version_id: int):
    from webapp.catalog.models import TrustReport

    _, version = team_version(request, environment_id, version_id)
    return [
        {"id": r.pk, "state": r.state, "verdict": r.verdict, "results": r.results, "error": r.error,
         "created_at": r.created_at, "finished_at": r.finished_at}
        for r in TrustReport.objects.filter(version=version).order_by("-created_at")[:20]
    ]  # fmt: skip


@router.post("/environments", response=answers(JobOut, write=True, status=202),
             summary="Add an environment: a job on a worker (fetch, install, start, describe)")  # fmt: skip
def environment_add(request: HttpRequest, body: EnvironmentIn):
    from webapp.jobs.models import Job
    from webapp.jobs.services import job_create

    token = write_required(request)
    job = job_create(team=token.team, user=token.user, kind=Job.Kind.ENV_ADD, params=body.dict())
    return 202, job_out(job)


@router.post("/environments/{environment_id}/versions", response=answers(JobOut, write=True, status=202),
             summary="Add a version to one of the team's environments (a job on a worker)")  # fmt: skip
def version_add(request: HttpRequest, environment_id: int, body: VersionIn):
    from webapp.jobs.models import Job
    from webapp.jobs.services import job_create

    token = write_required(request)
    environment = team_environments(request).filter(pk=environment_id, team_id=token.team_id).first()
    if environment is None:  # a shared environment of another team takes versions from that team only
        raise Http404("No such environment in this team")
    params = {"environment": environment.pk, **body.dict()}
    return 202, job_out(job_create(team=token.team, user=token.user, kind=Job.Kind.VERSION_ADD, params=params))


@router.post("/environments/{environment_id}/versions/{version_id}/testdrive",
             response=answers(JobOut, write=True, status=202),
             summary="Call one tool on a fresh server of the version (a job); follow /jobs/ID")  # fmt: skip
def version_testdrive(request: HttpRequest, environment_id: int, version_id: int, body: TestDriveIn):
    from webapp.jobs.models import Job
    from webapp.jobs.services import job_create

    token = write_required(request)
    _, version = team_version(request, environment_id, version_id)
    params = {"version": version.pk, "tool": body.tool, "arguments": body.arguments, "provider": body.provider,
              "seed": body.seed}  # fmt: skip
    return 202, job_out(job_create(team=token.team, user=token.user, kind=Job.Kind.TESTDRIVE, params=params))


@router.put("/environments/{environment_id}/versions/{version_id}/settings",
            response=answers(EnvironmentOut, write=True),
            summary="Change a version's settings while no run has used it")  # fmt: skip
def version_settings(request: HttpRequest, environment_id: int, version_id: int, body: VersionSettingsIn):
    from webapp.catalog.services import version_settings_update

    token = write_required(request)
    environment, version = team_version(request, environment_id, version_id)
    version_settings_update(version=version, user=token.user, settings=body.settings)
    return environment_out(environment)
