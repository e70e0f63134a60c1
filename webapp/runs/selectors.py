from __future__ import annotations

from django.db.models import QuerySet

from webapp.accounts.selectors import team_scope
from webapp.core.work_queue import WorkItem
from webapp.live.models import RunEvent
from webapp.runs.models import Episode, MetricPoint, Run, RunPrompts, Status


def run_list(*, user) -> QuerySet[Run]:
    return team_scope(Run.objects.all(), user=user).select_related("env_version__environment", "created_by")


def run_get(*, user, pk: int) -> Run:
    return run_list(user=user).get(pk=pk)


def run_prompts(*, run: Run) -> list[dict]:
    """The run's dataset rows ([] when it trains on the environment's default prompt)."""
    if not run.prompt_count:
        return []
    return RunPrompts.objects.filter(run=run).values_list("rows", flat=True).first() or []


def metric_tails(*, run_ids: list[int], name: str, last: int) -> dict[int, list[tuple[int, float]]]:
    """The last `last` points of one series for each run, oldest first: one query for a whole page of runs."""
    from django.db.models import F, Window
    from django.db.models.functions import RowNumber

    ranked = (
        MetricPoint.objects.filter(run_id__in=run_ids, name=name)
        .annotate(rank=Window(RowNumber(), partition_by=[F("run_id")], order_by=F("step").desc()))
        .filter(rank__lte=last)
        .values_list("run_id", "step", "value")
    )
    tails: dict[int, list[tuple[int, float]]] = {run_id: [] for run_id in run_ids}
    for run_id, step, value in ranked:
        tails[run_id].append((step, value))
    return {run_id: sorted(points) for run_id, points in tails.items()}


def metric_series(*, run: Run, name: str) -> QuerySet[MetricPoint]:
    return MetricPoint.objects.filter(run=run, name=name).order_by("step")


def metric_names(*, run: Run) -> list[str]:
    return sorted(MetricPoint.objects.filter(run=run).values_list("name", flat=True).distinct())


def episode_list(*, run: Run) -> QuerySet[Episode]:
    return Episode.objects.filter(run=run)


def events_after(*, run: Run, seq: int) -> QuerySet[RunEvent]:
    return RunEvent.objects.filter(run=run, seq__gt=seq).order_by("seq")


def environment_activity(*, run: Run) -> list[dict]:
    """A mixed run's environments, each with its episodes and how many of them reached its server with a tool call
    that did not fail: an environment no episode stepped taught the run nothing, whatever the run's status says."""
    from django.db.models import Count, F, Q

    counts = {
        row["environment"]: row
        for row in Episode.objects.filter(run=run).values("environment").annotate(
            episodes=Count("id"), stepped=Count("id", filter=Q(num_tool_calls__gt=F("num_tool_errors"))))
    }  # fmt: skip
    out = []
    for entry in run.environments:
        row = counts.get(entry["key"], {})
        episodes, stepped = row.get("episodes", 0), row.get("stepped", 0)
        out.append({**entry, "episodes": episodes, "stepped": stepped, "never_stepped": episodes > 0 and not stepped})
    return out


def _run_work_item(run: Run) -> WorkItem:
    return WorkItem(kind="run", pk=run.pk, team_id=run.team_id, name=run.name, url=run.get_absolute_url(),
                    status=run.status, detail=f"step {run.step}/{run.max_steps}", environment=str(run.env_version),
                    model=run.model_name, waiting_since=run.queued_at or run.created_at,
                    gpus=int((run.config or {}).get("gpus", 0)))  # fmt: skip


def runs_waiting(limit: int) -> list[WorkItem]:
    """Queued runs, oldest first, as the Workers page shows them."""
    queued = Run.objects.filter(status=Status.QUEUED).select_related("env_version__environment")
    return [_run_work_item(run) for run in queued.order_by("queued_at", "pk")[:limit]]


def runs_described(pks: list[int]) -> dict[int, WorkItem]:
    runs = Run.objects.filter(pk__in=pks).select_related("env_version__environment")
    return {run.pk: _run_work_item(run) for run in runs}


def run_follow(run: Run, *, file, timeout: float = float("inf"), poll: float = 1.0) -> Run:
    """A run followed from a terminal: a progress bar of its steps and its status, until it ends."""
    from webapp.core.follow import progress_follow
    from webapp.runs.models import FINAL_STATUSES

    return progress_follow(run, total=run.max_steps, done=lambda r: r.step, finished=tuple(FINAL_STATUSES),
                           unit="step", file=file, timeout=timeout, poll=poll)  # fmt: skip
