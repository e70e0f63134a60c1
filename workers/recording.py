"""What the trainer records: every logged metric of every step, and every episode in full.

The database is written first (batched: one bulk insert per step), then small deltas are published with the run's
sequence numbers. Runs inside the trainer subprocess, with Django set up.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

from django.utils import timezone

from envs.adapter import EpisodeLog, ToolEnvironment
from webapp.live.publish import publish
from webapp.runs.models import Episode, MetricPoint, Run

TEXT_LIMIT = 4000  # characters of one message kept in a live delta (the database keeps it whole)


def numeric_metrics(logs: dict[str, Any]) -> dict[str, float]:
    out = {}
    for name, value in logs.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(float(value)):
            out[name] = float(value)
    return out


class MetricRecorder:
    """Stores TRL's per-step logs as MetricPoints and publishes `run.metrics` (and progress) deltas."""

    def __init__(self, run: Run) -> None:
        self.run_id = run.pk
        self.team_id = run.team_id
        self.max_steps = run.max_steps

    def record(self, step: int, logs: dict[str, Any]) -> dict[str, float]:
        values = numeric_metrics(logs)
        if not values:
            return values
        now = time.time()
        MetricPoint.objects.bulk_create(
            [MetricPoint(run_id=self.run_id, name=name, step=step, value=value, wall_time=now)
             for name, value in values.items()],
            update_conflicts=True,  # a resumed run logs its steps again: the newer value wins
            unique_fields=["run", "name", "step"],
            update_fields=["value", "wall_time"],
        )  # fmt: skip
        Run.objects.filter(pk=self.run_id).update(step=step, heartbeat_at=timezone.now())
        progress = min(1.0, step / self.max_steps) if self.max_steps else 0.0
        publish(
            self.run_id,
            [("run.metrics", {"step": step, "wall_time": now, "values": values}),
             ("run.progress", {"step": step, "max_steps": self.max_steps, "progress": round(progress, 4)})],
        )  # fmt: skip
        return values


def _short(text: Any) -> Any:
    if isinstance(text, str) and len(text) > TEXT_LIMIT:
        return text[:TEXT_LIMIT] + "…"
    return text


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
            elif isinstance(turn["content"], str) and turn["content"].startswith("{'error'"):
                turn["error"] = turn["content"]
            turns.append(turn)
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


class EpisodeRecorder:
    """Turns a batch's completions and environment logs into Episode rows and `run.episode` deltas."""

    def __init__(self, run: Run, group_size: int) -> None:
        self.run_id = run.pk
        self.group_size = group_size

    def record(
        self,
        *,
        step: int,
        prompts: list[Any],
        completions: list[list[dict[str, Any]]],
        environments: list[ToolEnvironment],
        rewards: list[float],
    ) -> list[Episode]:
        advantages = group_advantages(rewards, self.group_size)
        rows = []
        for index, (prompt, completion, env, reward) in enumerate(zip(prompts, completions, environments, rewards,
                                                                      strict=True)):  # fmt: skip
            log = env.episode
            turns = episode_turns(completion, log)
            tool_turns = [t for t in turns if t["role"] == "tool"]
            rows.append(
                Episode(
                    run_id=self.run_id,
                    step=step,
                    group=index // self.group_size,
                    index_in_group=index % self.group_size,
                    prompt=prompt_text(prompt),
                    turns=turns,
                    reset_kwargs=(log.reset_kwargs if log else {}),
                    reward=reward,
                    advantage=advantages[index],
                    env_episode_id=log.episode_id if log else "",
                    num_tool_calls=len(tool_turns),
                    num_tool_errors=sum(1 for t in tool_turns if t.get("error")),
                    error=(log.error or "") if log else "",
                )
            )
        Episode.objects.bulk_create(rows)
        publish(self.run_id, [("run.episode", {"step": step, "episode": self.delta(e)}) for e in rows])
        return rows

    @staticmethod
    def delta(episode: Episode) -> dict[str, Any]:
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
            "turns": turns,
        }
