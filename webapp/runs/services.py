"""Actions that change runs: record one from its spec (checked by webapp.runs.spec), queue, cancel, clone, resume,
fail, forget replayed steps. Every status change goes through run_transition, which writes the timestamp, emits a
`run.status` event and refuses an illegal move."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_require
from webapp.catalog.models import EnvironmentVersion
from webapp.catalog.services import version_mark_used
from webapp.core.work_queue import WorkKind, work_queue
from webapp.fleet.fit import RUN_QUEUE, SLURM_QUEUE
from webapp.live.publish import publish
from webapp.runs.models import FINAL_STATUSES, TIMESTAMP_FIELD, TRANSITIONS, Run, RunPrompts, Status
from webapp.runs.names import friendly_name
from webapp.runs.selectors import run_prompts, runs_described, runs_waiting
from webapp.runs.spec import RunSpec, run_spec_check


class IllegalTransition(ValidationError):
    pass


def run_status_payload(run: Run) -> dict[str, Any]:
    return {
        "status": run.status,
        "progress": round(run.progress, 4),
        "step": run.step,
        "max_steps": run.max_steps,
        "reason": run.failure_reason,
    }


def run_transition(run: Run, to: str, *, reason: str = "", **fields: Any) -> Run:
    """Move `run` to status `to` if that move is legal from its stored status (checked in the database)."""
    with transaction.atomic():
        current = Run.objects.select_for_update().get(pk=run.pk)
        if to not in TRANSITIONS[current.status]:
            raise IllegalTransition(f"A run cannot go from {current.status} to {to}.")
        now = timezone.now()
        updates: dict[str, Any] = {"status": to, TIMESTAMP_FIELD[to]: now, **fields}
        if to in (Status.FAILED, Status.CRASHED):
            updates["failure_reason"] = reason or to
        if to == Status.QUEUED:
            updates.update(failure_reason="", finished_at=None, cancel_requested_at=None)
        Run.objects.filter(pk=run.pk).update(**updates)
        current.refresh_from_db()
    run.refresh_from_db()
    publish(run.pk, [("run.status", run_status_payload(run))], team_id=run.team_id)
    return run


def run_create(*, team: Team, user, spec: RunSpec | None = None, start: bool = True, **fields: Any) -> Run:
    """Check a run (`run_spec_check`), record it and queue it. Give a `spec`, or its fields as keywords
    (`env_version=…, config=…`)."""
    spec = spec if spec is not None else RunSpec(**fields)
    checked = run_spec_check(spec, team=team, user=user)
    parent = checked.parent
    with transaction.atomic():
        number = Run.objects.filter(team=team).count() + 1
        run = Run.objects.create(
            team=team,
            created_by=user,
            name=spec.name or friendly_name(number),
            env_version=spec.env_version,
            model_name=spec.model_name.strip(),
            prompt_count=len(checked.rows),
            config=checked.settings.as_dict(),
            replicas=checked.replicas,
            provider=checked.provider,
            tags=list(spec.tags or []),
            trust_override_reason=spec.trust_override_reason,
            transcript_policy=spec.transcript_policy,
            max_steps=checked.settings.max_steps,
            queued_at=timezone.now(),
            environments=checked.environments,
            parent_id=parent.run_id if parent else None,
            parent_model=parent.name if parent else "",
            parent_step=parent.step if parent else None,
        )
        if checked.rows:
            RunPrompts.objects.create(run=run, rows=checked.rows)
        version_mark_used(version=spec.env_version)
        publish(run.pk, [("run.status", run_status_payload(run))], team_id=team.pk)
        if start:
            run_start(run)
    return run


def run_start(run: Run) -> None:
    """Queue the run on the GPU queue once the surrounding transaction commits (the worker must see the row); with
    the broker down it stays queued and is sent when a worker is ready (webapp.core.work_queue)."""
    work_queue("run", run.pk)


def _runs_stranded(cutoff) -> list[int]:
    """Queued runs whose message never reached the broker (no task id)."""
    return list(Run.objects.filter(status=Status.QUEUED, celery_task_id="", queued_at__lt=cutoff)
                .values_list("pk", flat=True))  # fmt: skip


def _run_queue(pk: int) -> str:
    """A run for the Slurm cluster waits on the Slurm queue (its worker submits it); every other on the GPU queue."""
    config = Run.objects.filter(pk=pk).values_list("config", flat=True).first() or {}
    return SLURM_QUEUE if config.get("cluster") == "slurm" else RUN_QUEUE


RUN_WORK = WorkKind(
    name="run", task="workers.execute_run", queue=RUN_QUEUE, stranded=_runs_stranded,
    sent=lambda pk, task_id: Run.objects.filter(pk=pk).update(celery_task_id=task_id),
    waiting=runs_waiting, described=runs_described, queue_of=_run_queue,
)  # fmt: skip


def run_request_cancel(*, run: Run, user) -> Run:
    if user is not None:
        membership_require(user=user, team=run.team, role=Role.MEMBER)
    run.refresh_from_db()
    if run.status == Status.QUEUED:
        if run.celery_task_id:
            from webapp.celery_app import app

            app.control.revoke(run.celery_task_id)
        return run_transition(run, Status.CANCELLED)
    if run.status in (Status.PROVISIONING, Status.RUNNING):
        return run_transition(run, Status.CANCELLING)
    if run.status == Status.CANCELLING:
        return run
    raise IllegalTransition(f"{run.name} is {run.status}; there is nothing to cancel.")


def run_spec_of(run: Run) -> RunSpec:
    """The spec a recorded run was made from (what clone starts again)."""
    return RunSpec(
        env_version=run.env_version,
        model_name=run.model_name,
        prompts=run_prompts(run=run),
        config=run.config,
        replicas=run.replicas,
        provider=run.provider,
        tags=run.tags,
        trust_override_reason=run.trust_override_reason,
        transcript_policy=run.transcript_policy,
        mixture=run_mixture(run),
        env_weight=run.environments[0]["weight"] if run.environments else 1.0,
    )


def run_clone(*, run: Run, user, start: bool = True) -> Run:
    return run_create(team=run.team, user=user, spec=run_spec_of(run), start=start)


def run_mixture(run: Run) -> list[tuple[EnvironmentVersion, float]]:
    """The environments a run mixes beside its own version, with their weights."""
    extra = run.environments[1:]
    versions = EnvironmentVersion.objects.select_related("environment").in_bulk([e["version"] for e in extra])
    return [(versions[e["version"]], e["weight"]) for e in extra if e["version"] in versions]


def run_resume(*, run: Run, user, checkpoint: str | None = None) -> Run:
    """Queue a finished run again, continuing from its last checkpoint (or from scratch when it has none)."""
    from webapp.artifacts.layout import latest_checkpoint

    if user is not None:
        membership_require(user=user, team=run.team, role=Role.MEMBER)
    if run.status not in FINAL_STATUSES:
        raise IllegalTransition(f"{run.name} is {run.status}; only a finished run can resume.")
    if run.is_external:
        raise IllegalTransition(f"{run.name} was launched outside Trainyard: its own script resumes it.")
    found = checkpoint or latest_checkpoint(run.pk)  # a name in the artifact store: any host pulls it
    run = run_transition(run, Status.QUEUED, resume_from=found or "", trainer_outcome="")
    run_start(run)
    return run


def run_fail(run: Run, reason: str) -> Run:
    run.refresh_from_db()
    if run.status in FINAL_STATUSES:
        return run
    return run_transition(run, Status.FAILED, reason=reason)


def run_records_truncate(run: Run, *, after_step: int) -> dict[str, int]:
    """Forget what a run recorded after `after_step`: a resume from checkpoint-K replays steps K+1.., and its
    episodes and metrics replace those of the first attempt instead of being added to them."""
    from django.db.models import Sum

    from webapp.runs.models import Episode, MetricPoint
    from webapp.runs.rollups import rollups_rebuild

    with transaction.atomic():
        episodes = Episode.objects.filter(run=run, step__gt=after_step)
        counted = episodes.aggregate(calls=Sum("num_tool_calls"), errors=Sum("num_tool_errors"))
        calls, errors = counted["calls"] or 0, counted["errors"] or 0
        dropped_episodes = episodes.count()
        episodes.delete()
        points = MetricPoint.objects.filter(run=run, step__gt=after_step)
        names = sorted(set(points.values_list("name", flat=True)))
        dropped_points = points.delete()[0]
        for name in names:
            rollups_rebuild(run.pk, name)
        fresh = Run.objects.select_for_update().get(pk=run.pk)
        Run.objects.filter(pk=run.pk).update(
            step=min(fresh.step, after_step),
            episodes_recorded=max(0, fresh.episodes_recorded - dropped_episodes),
            env_tool_calls=max(0, fresh.env_tool_calls - (calls - errors)),
            env_tool_errors=max(0, fresh.env_tool_errors - errors),
        )
    return {"episodes": dropped_episodes, "points": dropped_points}
