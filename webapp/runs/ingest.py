"""Recording what a run produced: metric points and episodes written to the database, then published live.

One path for every run: the trainer's recorders (workers/training/recording.py) and the batches an external run's
client sends through the API (webapp/runs/external.py) both end here, so the run page, the sockets and compare see
no difference. The database is written first, then small deltas are published with the run's sequence numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.dispatch import Signal
from django.utils import timezone

from envs.adapter import EpisodeLog
from webapp.live.publish import publish
from webapp.runs.metric_writes import points_write
from webapp.runs.models import Episode, Run

# Sent after a batch of metrics is written and published (run_id=…): alert rules are checked on it
# (webapp/alerts/checks.py), without this module knowing of them.
metrics_recorded = Signal()

TEXT_LIMIT = 4000  # characters of one message kept in a live delta (the database keeps it whole)
MetricBatch = list[tuple[int, float, dict[str, float]]]  # (step, wall time, {name: value}) per logged step


def numeric_metrics(logs: dict[str, Any]) -> dict[str, float]:
    out = {}
    for name, value in logs.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(float(value)):
            out[name] = float(value)
    return out


def metrics_ingest(run_id: int, batch: MetricBatch, *, team_id: int, max_steps: int, forward_only: bool = False) -> int:
    """Write a batch of logged steps (a step logged again, after a resume, takes the newer values) and publish
    them with the run's progress. Returns the number of points. `forward_only`: the run's step never goes back
    (an external client's spooled batch may arrive after newer ones)."""
    if not batch:
        return 0
    points = [(name, step, value, wall) for step, wall, values in batch for name, value in values.items()]
    last_step = max(step for step, _, _ in batch)
    with transaction.atomic():
        points_write(run_id, points)
        step = Greatest(F("step"), Value(last_step)) if forward_only else last_step
        Run.objects.filter(pk=run_id).update(step=step, heartbeat_at=timezone.now())
    progress = min(1.0, last_step / max_steps) if max_steps else 0.0
    events = [("run.metrics", {"step": step, "wall_time": wall, "values": values}) for step, wall, values in batch]
    summary = {"step": last_step, "max_steps": max_steps, "progress": round(progress, 4)}
    # The runs list's sparkline: every rewarded step of the batch, as (step, reward).
    rewards = [[step, values["reward"]] for step, _, values in batch if "reward" in values]
    if rewards:
        summary["rewards"] = rewards
    events.append(("run.progress", summary))
    publish(run_id, events, team_id=team_id)
    metrics_recorded.send(sender=None, run_id=run_id)
    return len(points)


def episodes_ingest(run_id: int, rows: list[Episode], *, answered: int, failed: int) -> None:
    """Write a batch's episodes with the run's counts of environment calls, then publish them."""
    with transaction.atomic():
        Episode.objects.bulk_create(rows)
        Run.objects.filter(pk=run_id).update(
            episodes_recorded=F("episodes_recorded") + len(rows),
            env_tool_calls=F("env_tool_calls") + answered,
            env_tool_errors=F("env_tool_errors") + failed,
        )
    publish(run_id, [("run.episode", {"step": e.step, "episode": episode_delta(e)}) for e in rows])


def _short(text: Any) -> Any:
    if isinstance(text, str) and len(text) > TEXT_LIMIT:
        return text[:TEXT_LIMIT] + "…"
    return text


def episode_delta(episode: Episode) -> dict[str, Any]:
    turns = [{**t, "content": _short(t.get("content"))} for t in episode.turns]
    return {
        "id": episode.pk,
        "group": episode.group,
        "index": episode.index_in_group,
        "reward": episode.reward,
        "advantage": episode.advantage,
        "num_tool_calls": episode.num_tool_calls,
        "num_tool_errors": episode.num_tool_errors,
        "error": episode.error,
        "environment": episode.environment,
        "rank": episode.rank,
        "turns": turns,
    }


NOT_RUN = ("not run: the episode's budget was spent before this call (max_completion_length tokens or "
           "max_tool_calling_iterations turns)")  # fmt: skip


def episode_turns(completion: list[dict[str, Any]], log: EpisodeLog | None) -> list[dict[str, Any]]:
    """Assistant turns with their tool calls, and tool results matched with the environment's own events."""
    events = list(log.events) if log else []
    turns: list[dict[str, Any]] = []
    for message in completion:
        role = message.get("role")
        if role == "assistant":
            calls = [
                {"name": (c.get("function") or {}).get("name"), "arguments": (c.get("function") or {}).get("arguments")}
                for c in message.get("tool_calls") or []
            ]
            turns.append({"role": "assistant", "content": message.get("content") or "", "tool_calls": calls})
        elif role == "tool":
            content = message.get("content")
            turn = {"role": "tool", "name": message.get("name"), "content": content if isinstance(content, str)
                    else str(content), "reward": None, "done": None, "error": None}  # fmt: skip
            # The environment saw this call iff an event of the same tool is next in its log.
            if events and events[0].tool == message.get("name"):
                event = events.pop(0)
                turn.update(reward=event.reward, done=event.done, error=event.error, seconds=round(event.seconds, 4))
                if getattr(event, "credit", None) is not None:  # the rubric's credit for this step, as sent
                    turn["credit"] = event.credit
                # When it began, in seconds after the episode's reset (a training run's dispatcher stamps both).
                at, origin = getattr(event, "at", None), getattr(log, "started_at", None)
                if at is not None and origin is not None:
                    turn["at"] = round(max(0.0, at - origin), 4)
            elif isinstance(turn["content"], str) and turn["content"].startswith("{'error'"):
                turn["error"] = turn["content"]
            turns.append(turn)
    if turns and turns[-1]["role"] == "assistant" and turns[-1]["tool_calls"]:
        # TRL runs no call of the last generation once the episode's budget is spent: a call shown with no answer
        # would read as one the environment ignored (OpenEnv's maze answers with ~300 tokens: at 384 completion
        # tokens its second call never ran).
        turns[-1]["not_run"] = NOT_RUN
    return turns


def group_advantages(rewards: list[float], group_size: int) -> list[float | None]:
    """GRPO's advantage: reward minus its group's mean, divided by the group's standard deviation."""
    out: list[float | None] = []
    for start in range(0, len(rewards), group_size):
        group = rewards[start : start + group_size]
        mean = statistics.fmean(group)
        std = statistics.pstdev(group) if len(group) > 1 else 0.0
        out += [(r - mean) / (std + 1e-4) for r in group]
    return out


def prompt_text(prompt: Any) -> str:
    if isinstance(prompt, list):
        return "\n\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    return str(prompt)


def row_key(prompt: str, reset_kwargs: dict[str, Any]) -> str:
    """The dataset row an episode played: the same prompt and reset columns (seed included) in any run."""
    body = json.dumps({"prompt": prompt, "reset": reset_kwargs}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]
