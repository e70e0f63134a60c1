"""An evaluation's aggregates from its recorded episodes, per environment version: mean reward (avg@k), success
rate, unbiased pass@k, tool-call error rate, turns and tokens per episode, with 95 % bootstrap intervals over
episodes. Plain Python over plain dicts: the worker computes them when an evaluation ends, and a test recomputes
them from the rows to check."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from webapp.evals.statistics import avg_at_k, bootstrap, difference, pass_at

FIELDS = ("environment", "row_key", "sample", "reward", "success", "num_turns", "num_tokens", "num_tool_calls",
          "num_tool_errors")  # fmt: skip


def episode_groups(episodes: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, list[Mapping[str, Any]]]]:
    """environment key → row_key (one episode: prompt and seed) → its samples in order."""
    out: dict[str, dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for episode in sorted(episodes, key=lambda e: (e["environment"], e["row_key"], e["sample"])):
        out[episode["environment"]][episode["row_key"]].append(episode)
    return {key: dict(rows) for key, rows in out.items()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def version_results(rows: Mapping[str, list[Mapping[str, Any]]], *, k: int, threshold: float) -> dict[str, Any]:
    """The aggregates of one version's episodes (`rows`: row_key → samples)."""
    keys = sorted(rows)
    rewards = [[float(s["reward"]) for s in rows[key]] for key in keys]
    samples = [s for key in keys for s in rows[key]]
    successes = [[1.0 if s["reward"] > threshold else 0.0 for s in rows[key]] for key in keys]
    calls = sum(s["num_tool_calls"] for s in samples)
    out: dict[str, Any] = {
        "episodes": len(keys),
        "samples": len(samples),
        "k": k,
        "threshold": threshold,
        "mean_reward": bootstrap(rewards, avg_at_k).as_dict(),
        "success_rate": bootstrap(successes, avg_at_k).as_dict(),
        "pass@1": bootstrap(rewards, pass_at(1, threshold)).as_dict(),
        "tool_calls_per_episode": _mean([float(s["num_tool_calls"]) for s in samples]),
        "tool_error_rate": (sum(s["num_tool_errors"] for s in samples) / calls) if calls else 0.0,
        "turns_per_episode": _mean([float(s["num_turns"]) for s in samples]),
        "tokens_per_episode": _mean([float(s["num_tokens"]) for s in samples]),
    }
    smallest = min((len(r) for r in rewards), default=0)
    if k > 1 and smallest >= k:
        out[f"pass@{k}"] = bootstrap(rewards, pass_at(k, threshold)).as_dict()
    out["avg@k"] = out["mean_reward"]["value"]
    # The same numbers under names a template can read (pass@1 is not an attribute name).
    out["pass_at_1"] = out["pass@1"]
    out["pass_at_k"] = out.get(f"pass@{k}", out["pass@1"] if k == 1 else None)
    return out


def evaluation_results(episodes: Iterable[Mapping[str, Any]], *, k: int, thresholds: Mapping[str, float]
                       ) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Aggregates per environment key of every recorded episode."""
    return {key: version_results(rows, k=k, threshold=thresholds.get(key, 0.0))
            for key, rows in episode_groups(episodes).items()}  # fmt: skip


def paired_difference(before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]], *, environment: str
                      ) -> dict[str, Any] | None:  # fmt: skip
    """after - before in mean reward, paired by episode (the same row_key in both), with its interval; None when the
    two share no episode."""
    first = episode_groups(before).get(environment, {})
    second = episode_groups(after).get(environment, {})
    shared = sorted(set(first) & set(second))
    if not shared:
        return None
    interval = difference([[float(s["reward"]) for s in first[key]] for key in shared],
                          [[float(s["reward"]) for s in second[key]] for key in shared])  # fmt: skip
    return {**interval.as_dict(), "episodes": len(shared), "helped": interval.low > 0, "hurt": interval.high < 0}
