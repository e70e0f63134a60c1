"""How a run's episode rewards are spread, step by step: the histogram behind the run page's heat strip, and the
share of GRPO groups whose members all earned the same reward (zero spread: every advantage is 0, so the group
teaches the policy nothing)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from webapp.runs.models import Episode, Run

BINS = 20
MOST_COLUMNS = 300  # steps are merged into at most this many columns; a column says which steps it holds


def _edges(low: float, high: float) -> list[float]:
    if high <= low:
        low, high = low - 0.5, high + 0.5
    width = (high - low) / BINS
    return [low + i * width for i in range(BINS + 1)]


def _bin(value: float, edges: list[float]) -> int:
    low, high = edges[0], edges[-1]
    return min(BINS - 1, max(0, int((value - low) / (high - low) * BINS)))


def zero_spread_share(groups: dict[Any, list[float]]) -> float | None:
    """The share of groups (of two or more episodes) whose rewards are all equal."""
    sized = [rewards for rewards in groups.values() if len(rewards) > 1]
    if not sized:
        return None
    return sum(1 for rewards in sized if max(rewards) - min(rewards) < 1e-9) / len(sized)


def reward_distribution(run: Run) -> dict[str, Any]:
    """Columns of steps, each with its reward histogram (counts per bin over shared edges), its episodes' mean
    and the zero-spread share of its GRPO groups."""
    by_step: dict[int, dict[Any, list[float]]] = defaultdict(lambda: defaultdict(list))
    rows = Episode.objects.filter(run=run).values_list("step", "rank", "environment", "group", "reward")
    for step, rank, environment, group, reward in rows.iterator(chunk_size=5000):
        by_step[step][(rank, environment, group)].append(reward)
    if not by_step:
        return {"columns": [], "edges": [], "bins": BINS}
    rewards = [r for groups in by_step.values() for members in groups.values() for r in members]
    edges = _edges(min(rewards), max(rewards))
    steps = sorted(by_step)
    per_column = max(1, -(-len(steps) // MOST_COLUMNS))
    columns = []
    for start in range(0, len(steps), per_column):
        held = steps[start : start + per_column]
        counts = [0] * BINS
        values: list[float] = []
        shares = []
        for step in held:
            for members in by_step[step].values():
                values += members
                for r in members:
                    counts[_bin(r, edges)] += 1
            share = zero_spread_share(by_step[step])
            if share is not None:
                shares.append(share)
        columns.append({"first_step": held[0], "last_step": held[-1], "counts": counts, "episodes": len(values),
                        "mean": statistics.fmean(values), "zero_spread_share":
                        statistics.fmean(shares) if shares else None})  # fmt: skip
    return {"columns": columns, "edges": edges, "bins": BINS}
