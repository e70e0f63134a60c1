"""External runs: training launched outside Trainyard (a team's own GRPO script, a notebook, a job on rented GPUs)
that reports through the API with the Python client (client/).

Such a run has no worker: its client creates it (running at once), sends append-only batches of metrics and
episodes, beats, and says how it ended. Each batch carries an idempotency key and is recorded at most once, in one
transaction with its key, so a client that retries after a timeout or replays its spool after an outage never
doubles a point or an episode. Everything goes through webapp.runs.ingest, as a worker's run does: same tables,
same live deltas, same pages. A run whose client stops beating for TRAINYARD_EXTERNAL_CRASH_AFTER is **crashed**
(beat's reap); if the client reports again (it was only cut off), the run runs on.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_require
from webapp.catalog.models import EnvironmentVersion
from webapp.live.publish import publish
from webapp.runs.ingest import episode_turns, episodes_ingest, group_advantages, metrics_ingest, row_key
from webapp.runs.models import ACTIVE_STATUSES, Episode, ExternalBatch, Kind, Run, Status
from webapp.runs.names import friendly_name
from webapp.runs.services import IllegalTransition, run_status_payload, run_transition

# Bounds of one batch (MLflow's log-batch allows 1,000 metrics in about 1 MB).
MAX_BATCH_BYTES = 1_048_576
MAX_METRIC_VALUES = 1000
MAX_EPISODES = 256
MAX_TURNS = 400
MAX_CONFIG_BYTES = 65_536
MAX_NAME = 100
LARGEST_STEP = 2**31 - 1
ENDINGS = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.CRASHED)


def _json_size(value: Any) -> int:
    return len(json.dumps(value, default=str))


def external_run_create(
    *, team: Team, user, env_version: EnvironmentVersion, name: str = "", model_name: str = "",
    config: dict | None = None, max_steps: int = 0, tags: list[str] | None = None, external: dict | None = None,
) -> Run:  # fmt: skip
    """A run that a script elsewhere trains and reports: running from the start, with no worker."""
    membership_require(user=user, team=team, role=Role.MEMBER)
    config = dict(config or {})
    if _json_size(config) > MAX_CONFIG_BYTES:
        raise ValidationError({"config": f"The config is over {MAX_CONFIG_BYTES:,} bytes as JSON."})
    if not 0 <= max_steps <= LARGEST_STEP:
        raise ValidationError({"max_steps": f"max_steps must be between 0 and {LARGEST_STEP:,}."})
    now = timezone.now()
    with transaction.atomic():
        number = Run.objects.filter(team=team).count() + 1
        run = Run.objects.create(
            team=team, created_by=user, kind=Kind.EXTERNAL,
            name=(name or "").strip()[:MAX_NAME] or friendly_name(number), env_version=env_version,
            model_name=(model_name or "external")[:300], config=config,
            provider="external", replicas=0, tags=list(tags or [])[:20], max_steps=max_steps, status=Status.RUNNING,
            queued_at=now, running_at=now, heartbeat_at=now, external=dict(external or {}),
        )  # fmt: skip
    publish(run.pk, [("run.status", run_status_payload(run))], team_id=run.team_id)
    return run


def _external(run: Run) -> None:
    if not run.is_external:
        raise IllegalTransition(f"{run.name} is trained by a Trainyard worker: only an external run takes batches.")


def _revived(run: Run) -> Run:
    """A crashed run whose client reports again runs on (it was cut off, not dead)."""
    if run.status == Status.CRASHED:
        return run_transition(run, Status.RUNNING, failure_reason="", finished_at=None)
    return run


def _reporting(run: Run) -> Run:
    _external(run)
    run.refresh_from_db()
    run = _revived(run)
    if run.status not in ACTIVE_STATUSES:
        raise IllegalTransition(f"{run.name} has ended ({run.status}): it takes no more batches.")
    return run


def external_heartbeat(*, run: Run) -> Run:
    run = _reporting(run)
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    return run


def _metric_batch(metrics: list[dict[str, Any]]) -> list[tuple[int, float, dict[str, float]]]:
    batch, total = [], 0
    now = timezone.now().timestamp()
    for index, row in enumerate(metrics):
        step = row.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= LARGEST_STEP:
            raise ValidationError({"metrics": f"metrics[{index}].step must be a whole number from 0 to {LARGEST_STEP}"})
        values = {}
        for name, value in (row.get("values") or {}).items():
            if not isinstance(name, str) or not 0 < len(name) <= 100 or "\x00" in name:
                raise ValidationError({"metrics": f"metrics[{index}]: a metric name must be 1 to 100 characters"})
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
                continue  # as a worker's recorder does: only finite numbers are points
            values[name] = float(value)
        total += len(values)
        wall = row.get("wall_time")
        wall = float(wall) if isinstance(wall, int | float) and math.isfinite(wall) else now
        if values:
            batch.append((step, wall, values))
    if total > MAX_METRIC_VALUES:
        raise ValidationError({"metrics": f"A batch holds at most {MAX_METRIC_VALUES} metric values, not {total}."})
    return batch


def _turns(messages: list[Any], index: int) -> list[dict[str, Any]]:
    """A client's chat messages (OpenAI style, as TRL's completions) as the transcript shows turns; a tool message
    may carry what the environment said (`reward`, `done`, `error`) and how long the call took (`seconds`)."""
    if len(messages) > MAX_TURNS or not all(isinstance(m, dict) for m in messages):
        raise ValidationError({"episodes": f"episodes[{index}].turns: at most {MAX_TURNS} chat messages (objects)"})
    turns = episode_turns(messages, None)
    tools = iter([m for m in messages if m.get("role") == "tool"])
    for turn in turns:
        if turn["role"] == "tool":
            sent = next(tools)
            for key in ("reward", "done", "error", "seconds"):
                if sent.get(key) is not None:
                    turn[key] = sent[key]
    return turns


def _episodes(run: Run, episodes: list[dict[str, Any]]) -> tuple[list[Episode], int, int]:
    rows: list[Episode] = []
    answered = failed = 0
    seen_in_group: dict[tuple[Any, Any], int] = {}
    for index, e in enumerate(episodes):
        if not isinstance(e, dict):
            raise ValidationError({"episodes": f"episodes[{index}] must be an object"})
        step, group, reward = e.get("step"), e.get("group"), e.get("reward")
        if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= LARGEST_STEP:
            raise ValidationError(
                {"episodes": f"episodes[{index}].step must be a whole number from 0 to {LARGEST_STEP}"}
            )
        if not isinstance(group, int) or isinstance(group, bool) or not 0 <= group <= 1_000_000:
            raise ValidationError({"episodes": f"episodes[{index}].group must be a whole number from 0 to 1,000,000"})
        if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(float(reward)):
            raise ValidationError({"episodes": f"episodes[{index}].reward must be a finite number"})
        advantage = e.get("advantage")
        advantage = float(advantage) if isinstance(advantage, int | float) and math.isfinite(advantage) else None
        turns = _turns(e.get("turns") or [], index)
        tool_turns = [t for t in turns if t["role"] == "tool"]
        errors = sum(1 for t in tool_turns if t.get("error"))
        answered, failed = answered + len(tool_turns) - errors, failed + errors
        position = seen_in_group[(step, group)] = seen_in_group.get((step, group), -1) + 1
        prompt = str(e.get("prompt") or "")
        reset = e.get("reset") if isinstance(e.get("reset"), dict) else {}
        rows.append(Episode(
            run_id=run.pk, step=step, group=group, rank=_whole(e.get("rank"), most=100_000),
            environment=str(e.get("environment") or "")[:120],
            index_in_group=_whole(position if e.get("index") is None else e["index"], most=100_000),
            prompt=prompt, turns=turns, reset_kwargs=reset, row_key=row_key(prompt, reset), reward=float(reward),
            advantage=advantage, num_tool_calls=len(tool_turns), num_tool_errors=errors,
            error=str(e.get("error") or "")[:10_000],
        ))  # fmt: skip
    _advantages_filled(rows)
    return rows, answered, failed


def _whole(value: Any, *, most: int) -> int:
    """An optional whole number of an episode (its rank, its index in the group): 0 when absent or not one."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= most:
        return value
    return 0


def _advantages_filled(rows: list[Episode]) -> None:
    """An episode sent without its advantage gets GRPO's, from its group's members in the same batch."""
    groups: dict[tuple[int, int], list[Episode]] = {}
    for row in rows:
        groups.setdefault((row.step, row.group), []).append(row)
    for members in groups.values():
        if any(m.advantage is None for m in members) and len(members) > 1:
            for member, advantage in zip(members, group_advantages([m.reward for m in members], len(members)),
                                         strict=True):  # fmt: skip
                if member.advantage is None:
                    member.advantage = advantage


def external_batch_record(
    *, run: Run, key: str, metrics: list[dict[str, Any]], episodes: list[dict[str, Any]]
) -> dict[str, Any]:
    """Record one batch of an external run once: its key, its points and its episodes in one transaction. A key
    seen before records nothing and says so (`duplicate`)."""
    if not key or len(key) > 100 or "\x00" in key:
        raise ValidationError({"batch_id": "A batch needs an idempotency key of 1 to 100 characters."})
    if len(episodes) > MAX_EPISODES:
        raise ValidationError({"episodes": f"A batch holds at most {MAX_EPISODES} episodes, not {len(episodes)}."})
    run = _reporting(run)
    batch = _metric_batch(metrics)
    rows, answered, failed = _episodes(run, episodes)
    try:
        with transaction.atomic():
            ExternalBatch.objects.create(run=run, key=key, metrics=sum(len(v) for _, _, v in batch), episodes=len(rows))
            points = metrics_ingest(run.pk, batch, team_id=run.team_id, max_steps=run.max_steps, forward_only=True)
            if rows:
                episodes_ingest(run.pk, rows, answered=answered, failed=failed)
            Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    except IntegrityError:
        if ExternalBatch.objects.filter(run=run, key=key).exists():
            return {"duplicate": True, "metrics": 0, "episodes": 0, **_state(run)}
        raise
    return {"duplicate": False, "metrics": points, "episodes": len(rows), **_state(run)}


def _state(run: Run) -> dict[str, Any]:
    run.refresh_from_db(fields=["status"])
    return {"status": run.status, "cancel_requested": run.status == Status.CANCELLING}


def external_run_finish(*, run: Run, status: str, reason: str = "") -> Run:
    """The client says how its run ended: succeeded, failed (with its error), cancelled, or crashed."""
    _external(run)
    if status not in ENDINGS:
        raise ValidationError({"status": f"An external run ends {', '.join(ENDINGS)}, not {status!r}."})
    run.refresh_from_db()
    if run.status == status:
        return run  # said twice (a retried request): once is enough
    return run_transition(_revived(run), status, reason=(reason or "")[:10_000])


def external_runs_crash(*, silent_for: float | None = None) -> list[int]:
    """Beat's reap: external runs whose client has not beaten for `silent_for` seconds are crashed."""
    silent_for = silent_for if silent_for is not None else settings.TRAINYARD_EXTERNAL_CRASH_AFTER
    cutoff = timezone.now() - timedelta(seconds=silent_for)
    crashed = []
    for run in Run.objects.filter(kind=Kind.EXTERNAL, status__in=[Status.RUNNING, Status.CANCELLING],
                                  heartbeat_at__lt=cutoff):  # fmt: skip
        try:
            run_transition(run, Status.CRASHED, reason=f"its script stopped reporting for over {silent_for:.0f} s "
                                                       "(killed, or its machine lost)")  # fmt: skip
        except IllegalTransition:
            continue  # it ended meanwhile
        crashed.append(run.pk)
    return crashed
