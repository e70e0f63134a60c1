"""What the trainer records: every logged metric of every step, and every episode in full.

The database is written first (batched: one bulk insert per step), then small deltas are published with the run's
sequence numbers. Runs inside the trainer subprocess, with Django set up.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import statistics
import time
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from envs.adapter import EpisodeLog, ToolEnvironment
from webapp.live.publish import publish
from webapp.runs.metric_writes import points_write
from webapp.runs.models import Episode, Run

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
    """Stores TRL's per-step logs as MetricPoints (and their rollups) and publishes `run.metrics` deltas.

    Writes are batched: a step is flushed at once when steps are slower than `flush_seconds` (the usual case, so
    the page is live), and in batches when they come faster, so a fast logger costs one transaction per batch.
    """

    def __init__(self, run: Run, *, flush_seconds: float = 0.25, flush_points: int = 5000) -> None:
        self.run_id = run.pk
        self.team_id = run.team_id
        self.max_steps = run.max_steps
        self.flush_seconds = flush_seconds
        self.flush_points = flush_points
        self._buffer: list[tuple[int, float, dict[str, float]]] = []
        self._buffered_points = 0
        self._last_flush = 0.0

    def record(self, step: int, logs: dict[str, Any]) -> dict[str, float]:
        values = numeric_metrics(logs)
        if values:
            self._buffer.append((step, time.time(), values))
            self._buffered_points += len(values)
        now = time.monotonic()
        if self._buffered_points >= self.flush_points or now - self._last_flush >= self.flush_seconds:
            self.flush()
        return values

    def flush(self) -> int:
        self._last_flush = time.monotonic()
        if not self._buffer:
            return 0
        batch, self._buffer, self._buffered_points = self._buffer, [], 0
        points = [(name, step, value, wall) for step, wall, values in batch for name, value in values.items()]
        last_step = max(step for step, _, _ in batch)
        with transaction.atomic():
            # A resumed run logs its steps again: the newer value wins.
            points_write(self.run_id, points)
            Run.objects.filter(pk=self.run_id).update(step=last_step, heartbeat_at=timezone.now())
        progress = min(1.0, last_step / self.max_steps) if self.max_steps else 0.0
        events = [("run.metrics", {"step": step, "wall_time": wall, "values": values}) for step, wall, values in batch]
        summary = {"step": last_step, "max_steps": self.max_steps, "progress": round(progress, 4)}
        # The runs list's sparkline: every rewarded step of the batch, as (step, reward).
        rewards = [[step, values["reward"]] for step, _, values in batch if "reward" in values]
        if rewards:
            summary["rewards"] = rewards
        events.append(("run.progress", summary))
        publish(self.run_id, events, team_id=self.team_id)
        return len(points)


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


def row_key(prompt: str, reset_kwargs: dict[str, Any]) -> str:
    """The dataset row an episode played: the same prompt and reset columns (seed included) in any run."""
    body = json.dumps({"prompt": prompt, "reset": reset_kwargs}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def transcripts_to_keep(rewards: list[float], errored: list[bool], sample: int, seed: int) -> set[int]:
    """The `sample` policy: a random sample, the best, the worst and every errored episode of a batch."""
    if not rewards:
        return set()
    keep = {max(range(len(rewards)), key=rewards.__getitem__), min(range(len(rewards)), key=rewards.__getitem__)}
    keep |= {i for i, e in enumerate(errored) if e}
    keep |= set(random.Random(seed).sample(range(len(rewards)), min(sample, len(rewards))))
    return keep


def environment_calls(environments: list[ToolEnvironment]) -> tuple[int, int]:
    """(tool calls the environment answered without error, tool calls that failed) over a batch's episodes.

    A call the environment never saw (a tool the model invented, bad arguments caught before any step) is neither:
    the honest count of what a run learned from is the first number."""
    answered = failed = 0
    for env in environments:
        for event in env.episode.events if env.episode else []:
            if event.error:
                failed += 1
            elif event.observation is not None:
                answered += 1
    return answered, failed


class EpisodeRecorder:
    """Turns a batch's completions and environment logs into Episode rows and `run.episode` deltas."""

    SAMPLE = 2
    last_counts: dict[str, float] = {}

    def __init__(self, run: Run, group_size: int, rank: int = 0) -> None:
        self.run_id = run.pk
        self.group_size = group_size
        self.policy = run.transcript_policy
        self.rank = rank

    def record(
        self,
        *,
        step: int,
        prompts: list[Any],
        completions: list[list[dict[str, Any]]],
        environments: list[ToolEnvironment],
        rewards: list[float],
        environment_keys: list[str] | None = None,
    ) -> list[Episode]:
        advantages = group_advantages(rewards, self.group_size)
        errored = [bool(env.episode and (env.episode.error or any(e.error for e in env.episode.events)))
                   for env in environments]  # fmt: skip
        keep = range(len(rewards)) if self.policy == "all" else transcripts_to_keep(rewards, errored, self.SAMPLE, step)
        rows = []
        # Each rank holds whole groups (settings check it); its groups follow the lower ranks' in the step.
        first_group = self.rank * (len(rewards) // max(1, self.group_size))
        for index, (prompt, completion, env, reward) in enumerate(zip(prompts, completions, environments, rewards,
                                                                      strict=True)):  # fmt: skip
            log = env.episode
            turns = episode_turns(completion, log)
            tool_turns = [t for t in turns if t["role"] == "tool"]
            text = prompt_text(prompt)
            reset_kwargs = log.reset_kwargs if log else {}
            rows.append(
                Episode(
                    run_id=self.run_id,
                    step=step,
                    group=first_group + index // self.group_size,
                    rank=self.rank,
                    environment=environment_keys[index] if environment_keys else "",
                    index_in_group=index % self.group_size,
                    prompt=text,
                    turns=turns if index in keep else [],
                    has_transcript=index in keep,
                    row_key=row_key(text, reset_kwargs),
                    reset_kwargs=reset_kwargs,
                    reward=reward,
                    advantage=advantages[index],
                    env_episode_id=log.episode_id if log else "",
                    num_tool_calls=len(tool_turns),
                    num_tool_errors=sum(1 for t in tool_turns if t.get("error")),
                    error=(log.error or "") if log else "",
                )
            )
        answered, failed = environment_calls(environments)
        with transaction.atomic():
            Episode.objects.bulk_create(rows)
            Run.objects.filter(pk=self.run_id).update(
                episodes_recorded=F("episodes_recorded") + len(rows),
                env_tool_calls=F("env_tool_calls") + answered,
                env_tool_errors=F("env_tool_errors") + failed,
            )
        self.last_counts = {"env/tool_calls": answered, "env/tool_errors": failed,
                            "env/tool_calls_per_episode": answered / max(1, len(rows))}  # fmt: skip
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
            "environment": episode.environment,
            "rank": episode.rank,
            "turns": turns,
        }
