"""The objects a token may see: those of its team (and environments any team shares), nothing else.

Another team's object is a 404, never a 403: the API does not say that it exists."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest

from webapp.api.auth import token_of
from webapp.catalog.models import Environment, EnvironmentVersion, Visibility
from webapp.catalog.selectors import environment_list
from webapp.evals.models import Evaluation
from webapp.evals.selectors import evaluation_list
from webapp.runs.models import Run
from webapp.runs.selectors import run_list


def team_runs(request: HttpRequest) -> QuerySet[Run]:
    token = token_of(request)
    return run_list(user=token.user).filter(team_id=token.team_id)


def team_run(request: HttpRequest, run_id: int) -> Run:
    run = team_runs(request).filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run")
    return run


def team_environments(request: HttpRequest, *, search: str = "", tag: str = "") -> QuerySet[Environment]:
    token = token_of(request)
    return environment_list(user=token.user, search=search, tag=tag).filter(
        Q(team_id=token.team_id) | Q(visibility=Visibility.SHARED)
    )


def team_version(request: HttpRequest, environment_id: int, version_id: int) -> tuple[Environment, EnvironmentVersion]:
    environment = team_environments(request).filter(pk=environment_id).first()
    version = environment.versions.filter(pk=version_id).first() if environment else None
    if version is None:
        raise Http404("No such environment version")
    return environment, version


def team_version_named(
    request: HttpRequest, slug: str, label: str | None, *, field: str, label_field: str | None = None
) -> EnvironmentVersion:
    """A version by its environment's slug (the team's own first, else one shared with it) and its label (default:
    the latest); a field error names `field` (or `label_field` for an unknown label)."""
    token = token_of(request)
    named = team_environments(request).filter(slug=slug)
    environment = named.filter(team_id=token.team_id).first() or named.first()
    if environment is None:
        raise ValidationError({field: f"no environment {slug!r} in this team (or shared with it)"})
    versions = environment.versions.all()
    version = versions.filter(label=label).first() if label else versions.first()
    if version is None:
        raise ValidationError({label_field or field: f"{environment.slug} has no version {label!r}"})
    return version


def team_evaluations(request: HttpRequest) -> QuerySet[Evaluation]:
    token = token_of(request)
    return evaluation_list(user=token.user).filter(team_id=token.team_id)
