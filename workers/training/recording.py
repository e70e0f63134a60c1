"""What the trainer records: every logged metric of every step, and every episode in full.

The trainer's side: batching, and turning TRL's completions and the environments' logs into episodes. Writing and
publishing is webapp.runs.ingest's, which an external run's API batches go through too. Runs inside the trainer
subprocess, with Django set up.
"""

from __future__ import annotations

import random
import time
from typing import Any

from envs.adapter import ToolEnvironment
from webapp.runs.ingest import (
    episode_delta,
    episode_turns,
    episodes_ingest,
    group_advantages,
    metrics_ingest,
    numeric_metrics,
    prompt_text,
    row_key,
)
from webapp.runs.models import Episode, Run

__all__ = ["EpisodeRecorder", "MetricRecorder", "episode_turns", "group_advantages", "numeric_metrics", "row_key"]


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
        return metrics_ingest(self.run_id, batch, team_id=self.team_id, max_steps=self.max_steps)


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
        not_run = 0  # calls the episode's budget cut off: a run short of completion tokens shows it here
        # Each rank holds whole groups (settings check it); its groups follow the lower ranks' in the step.
        first_group = self.rank * (len(rewards) // max(1, self.group_size))
        for index, (prompt, completion, env, reward) in enumerate(zip(prompts, completions, environments, rewards,
                                                                      strict=True)):  # fmt: skip
            log = env.episode
            turns = episode_turns(completion, log)
            tool_turns = [t for t in turns if t["role"] == "tool"]
            not_run += bool(turns and turns[-1].get("not_run"))
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
        episodes_ingest(self.run_id, rows, answered=answered, failed=failed)
        self.last_counts = {"env/tool_calls": answered, "env/tool_errors": failed,
                            "env/tool_calls_per_episode": answered / max(1, len(rows)),
                            "env/calls_not_run": not_run}  # fmt: skip
        return rows

    delta = staticmethod(episode_delta)
