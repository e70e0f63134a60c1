"""Reads of the catalog, scoped to what the user may see: their teams' environments and shared ones."""

from __future__ import annotations

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from webapp.accounts.selectors import team_list_for_user
from webapp.artifacts.model_names import WARMSTART_NAME
from webapp.catalog.models import Environment, EnvironmentVersion, Visibility


def environment_list(*, user, search: str = "", tag: str = "") -> QuerySet[Environment]:
    if not user.is_authenticated:
        return Environment.objects.none()
    qs = Environment.objects.filter(
        Q(team__in=team_list_for_user(user=user)) | Q(visibility=Visibility.SHARED)
    ).select_related("team")
    if search:
        qs = qs.filter(Q(name__icontains=search) | Q(slug__icontains=search) | Q(description__icontains=search))
    if tag:
        # JSON containment is not on SQLite; tags are few, so filter the short list in Python-free SQL via LIKE.
        qs = qs.filter(tags__icontains=f'"{tag}"')
    return qs.distinct().order_by("name")


def environment_get(*, user, pk: int) -> Environment:
    return environment_list(user=user).get(pk=pk)


def environment_get_by_slug(*, user, slug: str) -> Environment:
    return environment_list(user=user).get(slug=slug)


def version_get(*, user, environment_pk: int, pk: int) -> EnvironmentVersion:
    return EnvironmentVersion.objects.select_related("environment__team").get(
        pk=pk, environment__in=environment_list(user=user), environment_id=environment_pk
    )


def version_list(*, user) -> QuerySet[EnvironmentVersion]:
    """Every version the user may run or evaluate: of their teams' environments and shared ones."""
    return (EnvironmentVersion.objects.filter(environment__in=environment_list(user=user))
            .select_related("environment").order_by("environment__name", "-created_at"))  # fmt: skip


def tag_list(*, user) -> list[str]:
    tags: set[str] = set()
    for row in environment_list(user=user).values_list("tags", flat=True):
        tags.update(row or [])
    return sorted(tags)


def warmstart_version_for(name: str, team):
    """The version a `tiny-local@slug:label` name was warm-started on, as `team` sees the catalog (its own
    environments first, then shared ones); None for any other name."""
    match = WARMSTART_NAME.match(name)
    if match is None:
        return None
    own_first = Case(When(environment__team=team, then=Value(0)), default=Value(1), output_field=IntegerField())
    return (
        EnvironmentVersion.objects.filter(environment__slug=match["slug"], label=match["label"])
        .filter(Q(environment__team=team) | Q(environment__visibility=Visibility.SHARED))
        .annotate(own=own_first)
        .order_by("own")
        .select_related("environment")
        .first()
    )


def accepted_calls(runs: list, last: int = 5) -> dict | None:
    """A version's accepted calls per episode over its last runs that played episodes: what a model really got to
    do in this environment (grid_world refused 16 of 18 calls; chess took random words until refusals counted)."""
    played = [run for run in runs if run.episodes_recorded][:last]
    if not played:
        return None
    episodes = sum(run.episodes_recorded for run in played)
    accepted = sum(run.env_tool_calls for run in played)
    refused = sum(run.env_tool_errors for run in played)
    return {"runs": len(played), "per_episode": accepted / episodes,
            "refused_share": refused / (accepted + refused) if accepted + refused else None}  # fmt: skip
