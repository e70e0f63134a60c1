"""Reads behind the compare page: the runs (all readable, or refused), their summary, config diff and the
episodes they played on the same dataset rows."""

from __future__ import annotations

import statistics
from typing import Any

from django.db.models import Max
from django.http import Http404

from webapp.runs.grpo import settings_flat
from webapp.runs.models import Episode, MetricPoint, Run
from webapp.runs.selectors import run_list

LAST_N = 10
MOST_RUNS = 20  # runs on one compare page


def runs_for_compare(*, user, ids: list[int]) -> list[Run]:
    """Every requested run, in the order asked; any run the user may not read refuses the whole request."""
    if not ids:
        raise Http404("Pick runs to compare: ?runs=12,15,19")
    found = {run.pk: run for run in run_list(user=user).filter(pk__in=ids)}
    refused = [i for i in ids if i not in found]
    if refused:
        raise Http404(f"Not found or not yours to read: run {', '.join(map(str, refused))}")
    return [found[i] for i in ids]


def _series(run: Run, name: str) -> list[float]:
    return list(MetricPoint.objects.filter(run=run, name=name).order_by("step").values_list("value", flat=True))


# The summary's column titles (its CSV keeps the keys: scripts read them).
SUMMARY_TITLES = {
    "final_reward": "Final reward",
    "best_reward": "Best reward",
    f"mean_last_{LAST_N}_reward": f"Mean reward, last {LAST_N} steps",
    "steps": "Steps",
    "tokens": "Tokens",
    "wall_time_s": "Wall time (s)",
    "tool_failure_rate": "Tool failure rate",
    "eval_baseline_reward": "Held-out reward, baseline",
    "eval_final_reward": "Held-out reward, final",
    "eval_final_success_rate": "Held-out success, final",
}


def summary_row(run: Run) -> dict[str, Any]:
    rewards = _series(run, "reward")
    failures = _series(run, "tools/failure_frequency")
    tokens = MetricPoint.objects.filter(run=run, name="num_tokens").aggregate(m=Max("value"))["m"]
    walls = MetricPoint.objects.filter(run=run, name="reward").order_by("step").values_list("wall_time", flat=True)
    wall_time = None
    if run.running_at and run.finished_at:
        wall_time = (run.finished_at - run.running_at).total_seconds()
    elif walls.exists():
        wall_time = walls.last() - walls.first()
    return {
        "run": run.pk,
        "name": run.name,
        "status": run.status,
        "final_reward": rewards[-1] if rewards else None,
        "best_reward": max(rewards) if rewards else None,
        f"mean_last_{LAST_N}_reward": statistics.fmean(rewards[-LAST_N:]) if rewards else None,
        "steps": run.step,
        "tokens": tokens,
        "wall_time_s": round(wall_time, 1) if wall_time is not None else None,
        "tool_failure_rate": statistics.fmean(failures) if failures else None,
        # The held-out evals (evals during training): the baseline at step 0 and the last one.
        "eval_baseline_reward": (_series(run, "eval/mean_reward") or [None])[0],
        "eval_final_reward": (_series(run, "eval/mean_reward") or [None])[-1],
        "eval_final_success_rate": (_series(run, "eval/success_rate") or [None])[-1],
    }


def definition(run: Run) -> dict[str, Any]:
    return {
        "environment": str(run.env_version),
        "environment_pin": run.env_version.pinned_ref,
        "environments": ", ".join(f"{e['key']} x{e['weight']:g}" for e in run.environments) or "one",
        "model": run.model_name,
        "provider": run.provider,
        "replicas": run.replicas,
        "prompts": f"{run.prompt_count} rows" if run.prompt_count else "environment default",
        "transcripts": run.transcript_policy,
        **{f"grpo.{k}": v for k, v in sorted(settings_flat(run.config).items())},
    }


def config_diff(runs: list[Run]) -> list[dict[str, Any]]:
    """Only the settings that differ between the runs (the environment version included)."""
    defs = [definition(run) for run in runs]
    keys = sorted({k for d in defs for k in d})
    return [{"key": k, "values": [d.get(k) for d in defs]} for k in keys if len({repr(d.get(k)) for d in defs}) > 1]


def shared_rows(runs: list[Run], limit: int = 20) -> list[dict[str, Any]]:
    """Dataset rows (same prompt and seed) that every run played, each with the latest episode of each run."""
    keys = None
    for run in runs:
        run_keys = set(Episode.objects.filter(run=run).exclude(row_key="").values_list("row_key", flat=True))
        keys = run_keys if keys is None else keys & run_keys
    out = []
    for key in sorted(keys or [])[:limit]:
        episodes = []
        for run in runs:
            ep = (Episode.objects.filter(run=run, row_key=key, has_transcript=True).order_by("-step").first()
                  or Episode.objects.filter(run=run, row_key=key).order_by("-step").first())  # fmt: skip
            episodes.append(ep)
        out.append(
            {
                "key": key,
                "prompt": episodes[0].prompt if episodes[0] else "",
                "seed": episodes[0].reset_kwargs.get("seed") if episodes[0] else None,
                "episodes": episodes,
            }
        )
    return out
