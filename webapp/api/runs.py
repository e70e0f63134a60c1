"""/api/v1/runs: list, show, create, cancel, resume, clone; metrics as downsampled series, episodes, models."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router
from pydantic import Field

from webapp.api.auth import write_required
from webapp.api.pages import PageQuery, page
from webapp.api.presenters import episode_out, run_out, saved_model_out
from webapp.api.responses import answers
from webapp.api.schemas import EpisodePage, InputSchema, MetricsOut, ResumeIn, RunIn, RunOut, RunPage, SavedModelOut
from webapp.api.scope import team_run, team_runs, team_version_named
from webapp.artifacts.saved_models import saved_models
from webapp.core.query_params import LARGEST_STEP
from webapp.runs import services
from webapp.runs.models import Episode, Status
from webapp.runs.rollups import series_downsampled
from webapp.runs.selectors import metric_names

router = Router(tags=["runs"])


class RunFilters(InputSchema):
    status: Status | None = None
    environment: str | None = Field(None, max_length=100, description="An environment's slug")
    search: str | None = Field(None, max_length=100, description="Part of the run's name")


@router.get("/runs", response=answers(RunPage), summary="The team's runs, newest first")
def run_list(request: HttpRequest, filters: Query[RunFilters], paging: Query[PageQuery]):
    runs = team_runs(request).select_related("env_version__environment")
    if filters.status:
        runs = runs.filter(status=filters.status)
    if filters.environment:
        runs = runs.filter(env_version__environment__slug=filters.environment)
    if filters.search:
        runs = runs.filter(name__icontains=filters.search)
    return page(runs, paging, run_out)


@router.get("/runs/{run_id}", response=answers(RunOut), summary="One run")
def run_show(request: HttpRequest, run_id: int):
    return run_out(team_run(request, run_id))


@router.post("/runs", response=answers(RunOut, write=True, status=201), summary="Create and queue a run")
def run_create(request: HttpRequest, body: RunIn):
    token = write_required(request)
    version = team_version_named(request, body.env, body.env_version, field="env", label_field="env_version")
    run = services.run_create(
        team=token.team, user=token.user, env_version=version, model_name=body.model,
        config={**body.config, "max_steps": body.max_steps}, name=body.name, tags=body.tags, provider=body.provider,
        replicas=body.replicas, trust_override_reason=body.trust_override_reason,
    )  # fmt: skip
    return 201, run_out(run)


@router.post("/runs/{run_id}/cancel", response=answers(RunOut, write=True), summary="Ask a run to stop")
def run_cancel(request: HttpRequest, run_id: int):
    token = write_required(request)
    return run_out(services.run_request_cancel(run=team_run(request, run_id), user=token.user))


@router.post("/runs/{run_id}/resume", response=answers(RunOut, write=True),
             summary="Queue a finished run again from its last (or a named) checkpoint in the store")  # fmt: skip
def run_resume(request: HttpRequest, run_id: int, body: ResumeIn):
    from django.core.exceptions import ValidationError

    token = write_required(request)
    run = team_run(request, run_id)
    if body.checkpoint and body.checkpoint not in {m.name for m in saved_models(run)} - {"final"}:
        raise ValidationError({"checkpoint": f"run {run.pk} has no {body.checkpoint} in the artifact store"})
    return run_out(services.run_resume(run=run, user=token.user, checkpoint=body.checkpoint))


@router.post("/runs/{run_id}/clone", response=answers(RunOut, write=True, status=201),
             summary="A new run with the same settings")  # fmt: skip
def run_clone(request: HttpRequest, run_id: int):
    token = write_required(request)
    return 201, run_out(services.run_clone(run=team_run(request, run_id), user=token.user))


class SeriesQuery(InputSchema):
    names: str = Field("", max_length=5000, description="Comma-separated metric names (default: every one)")
    lo: int | None = Field(None, ge=0, le=LARGEST_STEP)
    hi: int | None = Field(None, ge=0, le=LARGEST_STEP)


@router.get("/runs/{run_id}/metrics", response=answers(MetricsOut),
            summary="Metric series, min/max-downsampled to about 2,000 points each")  # fmt: skip
def run_metrics(request: HttpRequest, run_id: int, query: Query[SeriesQuery]):
    run = team_run(request, run_id)
    last_seq = run.last_seq
    wanted = [n for n in query.names.split(",") if n][:200] or metric_names(run=run)
    return {"run": run.pk, "last_seq": last_seq,
            "series": {name: series_downsampled(run.pk, name, query.lo, query.hi) for name in wanted}}  # fmt: skip


class EpisodeQuery(InputSchema):
    step: int | None = Field(None, ge=0, le=LARGEST_STEP)
    environment: str | None = Field(None, max_length=120)


@router.get("/runs/{run_id}/episodes", response=answers(EpisodePage),
            summary="Episodes with their transcripts, newest step first")  # fmt: skip
def run_episodes(request: HttpRequest, run_id: int, query: Query[EpisodeQuery], paging: Query[PageQuery]):
    episodes = Episode.objects.filter(run=team_run(request, run_id))
    if query.step is not None:
        episodes = episodes.filter(step=query.step)
    if query.environment:
        episodes = episodes.filter(environment=query.environment)
    return page(episodes.order_by("-step", "group", "index_in_group"), paging, episode_out)


@router.get("/runs/{run_id}/models", response=answers(list[SavedModelOut]),
            summary="Its saved models in the artifact store: final, then checkpoints newest first")  # fmt: skip
def run_models(request: HttpRequest, run_id: int):
    return [saved_model_out(m) for m in saved_models(team_run(request, run_id))]
