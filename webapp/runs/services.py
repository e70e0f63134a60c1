"""Actions that change runs. Every status change goes through run_transition, which writes the timestamp, emits a
`run.status` event and refuses an illegal move."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_require
from webapp.catalog.deployments import provider_for_version
from webapp.catalog.models import EnvironmentVersion
from webapp.catalog.services import version_mark_used
from webapp.core.text_bounds import text_bounds_check
from webapp.core.work_queue import WorkKind, work_queue
from webapp.fleet.fit import fleet_fit_check
from webapp.live.publish import publish
from webapp.runs.grpo import GRPOSettings
from webapp.runs.heldout import heldout_check
from webapp.runs.models import FINAL_STATUSES, TIMESTAMP_FIELD, TRANSITIONS, Run, RunPrompts, Status
from webapp.runs.names import friendly_name
from webapp.runs.selectors import run_prompts, runs_described, runs_waiting

TINY_MODEL = "tiny-local"


class IllegalTransition(ValidationError):
    pass


def prompts_from_jsonl(text: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError({"prompts_file": f"line {number} is not JSON: {exc.msg}"}) from None
        if not isinstance(row, dict) or "prompt" not in row:
            raise ValidationError({"prompts_file": f"line {number} must be an object with a 'prompt' field"})
        rows.append(row)
    if not rows:
        raise ValidationError({"prompts_file": "the file has no rows"})
    return rows


def prompts_normalize(prompts: list[Any] | None) -> list[dict[str, Any]]:
    """Inline prompts may be plain strings; rows are dicts with `prompt` (a string) and any reset columns.
    Bounded by TRAINYARD_MAX_PROMPT_ROWS rows and TRAINYARD_MAX_PROMPTS_MB of JSON."""
    rows = []
    for item in prompts or []:
        row = {"prompt": item} if isinstance(item, str) else dict(item) if isinstance(item, dict) else {}
        if not isinstance(row.get("prompt"), str) or not row["prompt"].strip():
            raise ValidationError({"prompts": "every prompt needs non-empty text"})
        rows.append(row)
    if len(rows) > settings.TRAINYARD_MAX_PROMPT_ROWS:
        raise ValidationError(
            {"prompts": f"{len(rows):,} prompts; a run takes at most {settings.TRAINYARD_MAX_PROMPT_ROWS:,}."}
        )
    size = len(json.dumps(rows))
    if size > settings.TRAINYARD_MAX_PROMPTS_MB * 1_000_000:
        raise ValidationError(
            {"prompts": f"the prompts take {size / 1e6:.1f} MB; a run takes at most "
                        f"{settings.TRAINYARD_MAX_PROMPTS_MB} MB (TRAINYARD_MAX_PROMPTS_MB)."}
        )  # fmt: skip
    return rows


def run_status_payload(run: Run) -> dict[str, Any]:
    return {
        "status": run.status,
        "progress": round(run.progress, 4),
        "step": run.step,
        "max_steps": run.max_steps,
        "reason": run.failure_reason,
    }


MAX_REPLICAS = 64


def sessions_needed(config: GRPOSettings) -> int:
    """Sessions a run holds at once: TRL keeps one environment per rollout of its generation batch, in every rank."""
    return config.per_device_train_batch_size * config.gradient_accumulation_steps * config.processes


def replicas_for_run(version: EnvironmentVersion, config: GRPOSettings, wanted: int | None, provider: str) -> int:
    """The replicas a run needs for its whole generation batch, or a field error that gives the numbers. `wanted`
    None means "as many as needed"; a run never discovers its environment's capacity at step 1."""
    needed = sessions_needed(config)
    per_replica = version.effective_capacity
    required = -(-needed // per_replica)
    measured = (f"measured {version.capacity_measured}" if version.capacity_measured is not None
                else "not measured")  # fmt: skip
    ranks = f" x {config.processes} processes" if config.processes > 1 else ""
    numbers = (f"a step holds {needed} sessions at once (batch {config.per_device_train_batch_size} x "
               f"accumulation {config.gradient_accumulation_steps}{ranks}); {version} takes {per_replica} a replica "
               f"(declared {version.capacity}, {measured})")  # fmt: skip
    if provider == "url":
        urls = len([u for u in version.source_ref.split(",") if u.strip()])
        if urls < required:
            raise ValidationError({"env_version": f"{numbers}: it needs {required} servers, and the URL names {urls}."})
        return urls
    if wanted is None:
        wanted = required
    if wanted < 1 or wanted > MAX_REPLICAS:
        raise ValidationError({"replicas": f"replicas must be between 1 and {MAX_REPLICAS}"})
    if required > MAX_REPLICAS:
        raise ValidationError({"per_device_train_batch_size": f"{numbers}: that is {required} replicas, more than "
                               f"{MAX_REPLICAS}; use a smaller batch."})  # fmt: skip
    if wanted < required:
        raise ValidationError({"replicas": f"{numbers}: it needs at least {required} replicas, not {wanted}."})
    return wanted


def run_transition(run: Run, to: str, *, reason: str = "", **fields: Any) -> Run:
    """Move `run` to status `to` if that move is legal from its stored status (checked in the database)."""
    with transaction.atomic():
        current = Run.objects.select_for_update().get(pk=run.pk)
        if to not in TRANSITIONS[current.status]:
            raise IllegalTransition(f"A run cannot go from {current.status} to {to}.")
        now = timezone.now()
        updates: dict[str, Any] = {"status": to, TIMESTAMP_FIELD[to]: now, **fields}
        if to == Status.FAILED:
            updates["failure_reason"] = reason or "failed"
        if to == Status.QUEUED:
            updates.update(failure_reason="", finished_at=None, cancel_requested_at=None)
        Run.objects.filter(pk=run.pk).update(**updates)
        current.refresh_from_db()
    run.refresh_from_db()
    publish(run.pk, [("run.status", run_status_payload(run))], team_id=run.team_id)
    return run


def run_create(
    *,
    team: Team,
    user,
    env_version: EnvironmentVersion,
    model_name: str = TINY_MODEL,
    prompts: list[Any] | None = None,
    config: dict[str, Any] | None = None,
    replicas: int | None = None,
    provider: str | None = None,
    name: str = "",
    tags: list[str] | None = None,
    trust_override_reason: str = "",
    transcript_policy: str = "all",
    mixture: list[tuple[EnvironmentVersion, float]] | None = None,
    env_weight: float = 1.0,
    start: bool = True,
    check_only: bool = False,
) -> Run | None:
    """Record a run and queue it. `check_only`: every check, nothing written (the form checks before its job)."""
    if user is not None:
        membership_require(user=user, team=team, role=Role.MEMBER)
    settings_ = GRPOSettings.from_dict(config)
    provider = provider_for_version(env_version, provider)
    replicas = replicas_for_run(env_version, settings_, replicas, provider)
    fleet_fit_check(gpus=settings_.gpus, generation_backend=settings_.generation_backend)
    if provider not in {"process", "docker", "url"}:
        raise ValidationError({"provider": f"unknown provider {provider!r}"})
    if not model_name.strip():
        raise ValidationError({"model_name": "name a model: tiny-local, a Hub id or a local path"})
    text_bounds_check(model_name=(model_name, 300), name=(name, 100), trust_override_reason=(trust_override_reason,
                      5000), tags=(",".join(tags or []), 500))  # fmt: skip
    rows = prompts_normalize(prompts)
    if transcript_policy not in {"all", "sample"}:
        raise ValidationError({"transcript_policy": "keep 'all' transcripts or a 'sample'"})
    from webapp.catalog.trust import trust_gate

    environments = environments_for_run(team, env_version, env_weight, mixture or [], settings_, provider, replicas)
    heldout_check(settings_.as_dict(), rows, max(1, len(environments)))
    for version in [env_version] + [v for v, _ in mixture or []]:
        held_back = trust_gate(version)
        if held_back and not trust_override_reason.strip():
            raise ValidationError({"trust_override_reason": f"{held_back}; give a reason to run it anyway."})
    from webapp.artifacts.saved_models import saved_model_resolve

    parent_model = saved_model_resolve(model_name, team=team)  # train from a run's checkpoint: its lineage
    if check_only:
        return None
    with transaction.atomic():
        number = Run.objects.filter(team=team).count() + 1
        run = Run.objects.create(
            team=team,
            created_by=user,
            name=name or friendly_name(number),
            env_version=env_version,
            model_name=model_name.strip(),
            prompt_count=len(rows),
            config=settings_.as_dict(),
            replicas=replicas,
            provider=provider,
            tags=list(tags or []),
            trust_override_reason=trust_override_reason,
            transcript_policy=transcript_policy,
            max_steps=settings_.max_steps,
            queued_at=timezone.now(),
            environments=environments,
            parent_id=parent_model.run_id if parent_model else None,
            parent_model=parent_model.name if parent_model else "",
            parent_step=parent_model.step if parent_model else None,
        )
        if rows:
            RunPrompts.objects.create(run=run, rows=rows)
        version_mark_used(version=env_version)
        publish(run.pk, [("run.status", run_status_payload(run))], team_id=team.pk)
        if start:
            run_start(run)
    return run


def environments_for_run(team: Team, primary: EnvironmentVersion, primary_weight: float,
                         extra: list[tuple[EnvironmentVersion, float]], config: GRPOSettings, provider: str,
                         replicas: int) -> list[dict[str, Any]]:  # fmt: skip
    """A mixed run's environments (its own version first), each with its key, weight and replicas sized for a whole
    step (a batch may draw all its rows from one environment). Empty for a run of one environment."""
    from django.db.models import Q

    from webapp.catalog.models import Visibility
    from webapp.runs.mixture import mixture_check, mixture_keys

    if not extra:
        return []
    mixture_check(primary, primary_weight, extra)
    for version, _ in extra:
        visible = Q(team=team) | Q(visibility=Visibility.SHARED)
        if not type(version.environment).objects.filter(visible, pk=version.environment_id).exists():
            raise ValidationError({"mixture": f"{version} is not an environment your team may use."})
    versions = [primary] + [v for v, _ in extra]
    keys = mixture_keys(versions)
    weights = [primary_weight] + [w for _, w in extra]
    entries = []
    for index, (version, key, weight) in enumerate(zip(versions, keys, weights, strict=True)):
        kind = provider_for_version(version, provider)
        count = replicas if index == 0 else replicas_for_run(version, config, None, kind)
        entries.append({"version": version.pk, "key": key, "weight": weight, "replicas": count, "provider": kind})
    return entries


def run_start(run: Run) -> None:
    """Queue the run on the GPU queue once the surrounding transaction commits (the worker must see the row); with
    the broker down it stays queued and is sent when a worker is ready (webapp.core.work_queue)."""
    work_queue("run", run.pk)


def _runs_stranded(cutoff) -> list[int]:
    """Queued runs whose message never reached the broker (no task id)."""
    return list(Run.objects.filter(status=Status.QUEUED, celery_task_id="", queued_at__lt=cutoff)
                .values_list("pk", flat=True))  # fmt: skip


RUN_WORK = WorkKind(
    name="run", task="workers.execute_run", queue="gpu", stranded=_runs_stranded,
    sent=lambda pk, task_id: Run.objects.filter(pk=pk).update(celery_task_id=task_id),
    waiting=runs_waiting, described=runs_described,
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


def run_clone(*, run: Run, user, start: bool = True) -> Run:
    return run_create(
        team=run.team,
        user=user,
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
        start=start,
    )


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
    found = checkpoint or latest_checkpoint(run.pk)
    run = run_transition(run, Status.QUEUED, resume_from=str(found or ""), trainer_outcome="")
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
