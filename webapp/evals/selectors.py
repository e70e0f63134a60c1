"""Reads of evaluations, scoped to the user's teams: lists, one evaluation's summary, the leaderboard of a version,
and the per-episode comparison of several evaluations."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import QuerySet

from webapp.accounts.selectors import team_scope
from webapp.core.work_queue import WorkItem
from webapp.evals.models import EvalEpisode, EvalStatus, Evaluation
from webapp.evals.results import FIELDS, paired_difference


def evaluation_list(*, user, standalone_only: bool = False) -> QuerySet[Evaluation]:
    qs = team_scope(Evaluation.objects.all(), user=user).select_related("env_version__environment", "run")
    return qs.filter(run__isnull=True) if standalone_only else qs


def evaluation_get(*, user, pk: int) -> Evaluation:
    return evaluation_list(user=user).get(pk=pk)


def evaluation_summary(evaluation: Evaluation) -> dict[str, Any]:
    """What `eval show --json` prints and `/evals/<id>/summary.json` answers."""
    return {
        "id": evaluation.pk,
        "name": evaluation.name,
        "status": evaluation.status,
        "failure_reason": evaluation.failure_reason,
        "model": evaluation.model_name,
        "run": evaluation.run_id,
        "step": evaluation.step,
        "environments": [
            {"key": e["key"], "version": e["label"], "threshold": e["threshold"]} for e in evaluation.versions
        ],
        "episodes": len(evaluation.prompts) or len(evaluation.seeds),
        "seeds": evaluation.seeds,
        "k": evaluation.k,
        "decoding": {
            "greedy": evaluation.greedy,
            "temperature": evaluation.temperature,
            "top_p": evaluation.top_p,
            "max_turns": evaluation.max_turns,
            "max_tokens": evaluation.max_tokens,
        },
        "settings_key": evaluation.settings_key,
        "progress": {
            "done": evaluation.episodes_done,
            "total": evaluation.episodes_total,
            "fraction": round(evaluation.progress, 4),
        },
        "results": evaluation.results,
    }


def evaluation_episodes(evaluation: Evaluation) -> list[dict[str, Any]]:
    return list(EvalEpisode.objects.filter(evaluation=evaluation).values("id", "seed", *FIELDS, "error"))


def run_evaluations(*, run) -> list[Evaluation]:
    """A run's evals during training, by step."""
    return list(Evaluation.objects.filter(run=run).order_by("step"))


def baseline_to_final(*, run) -> dict[str, Any] | None:
    """The first and last finished evals of a run and the paired difference of their mean reward: did training help?"""
    finished = [e for e in run_evaluations(run=run) if e.status == EvalStatus.SUCCEEDED]
    if len(finished) < 2:
        return None
    first, last = finished[0], finished[-1]
    key = first.versions[0]["key"]
    difference = paired_difference(
        EvalEpisode.objects.filter(evaluation=first).values(*FIELDS),
        EvalEpisode.objects.filter(evaluation=last).values(*FIELDS),
        environment=key,
    )
    return {
        "environment": key,
        "baseline": first,
        "final": last,
        "before": first.results.get(key, {}),
        "after": last.results.get(key, {}),
        "difference": difference,
    }


def leaderboard(*, user, version_id: int) -> list[dict[str, Any]]:
    """The best finished evaluation of each model on one version, among the user's teams' evaluations, grouped by
    the settings that produced them: results are only ranked against the same episodes, samples and decoding."""
    evaluations = evaluation_list(user=user).filter(status=EvalStatus.SUCCEEDED).order_by("created_at")
    boards: dict[tuple[str, float], dict[str, dict[str, Any]]] = defaultdict(dict)
    for evaluation in evaluations:
        for entry in evaluation.versions:
            if entry["version"] != version_id or entry["key"] not in evaluation.results:
                continue
            result = evaluation.results[entry["key"]]
            group = (evaluation.settings_key, entry.get("threshold", 0.0))
            best = boards[group].get(evaluation.model_name)
            if best is None or result["mean_reward"]["value"] > best["result"]["mean_reward"]["value"]:
                boards[group][evaluation.model_name] = {
                    "model": evaluation.model_name,
                    "evaluation": evaluation,
                    "result": result,
                }
    out = []
    for (key, threshold), models in boards.items():
        rows = sorted(models.values(), key=lambda row: -row["result"]["mean_reward"]["value"])
        sample = rows[0]["evaluation"]
        out.append(
            {
                "settings_key": key,
                "threshold": threshold,
                "rows": rows,
                "settings": evaluation_summary(sample)["decoding"] | {"k": sample.k, "episodes": len(sample.seeds)},
            }
        )
    return sorted(out, key=lambda board: -len(board["rows"]))


def comparison(evaluations: list[Evaluation]) -> dict[str, Any]:
    """Several evaluations side by side: per episode (same environment version and row: prompt and seed) the mean
    reward of each, the episodes where they differ first."""
    by_episode: dict[tuple[int, str], dict[str, Any]] = {}
    for position, evaluation in enumerate(evaluations):
        keys = {e["key"]: e["version"] for e in evaluation.versions}
        for episode in EvalEpisode.objects.filter(evaluation=evaluation).values("id", "seed", "prompt", *FIELDS):
            slot = (keys[episode["environment"]], episode["row_key"])
            row = by_episode.setdefault(
                slot,
                {
                    "version": slot[0],
                    "environment": episode["environment"],
                    "seed": episode["seed"],
                    "prompt": episode["prompt"][:200],
                    "cells": [None] * len(evaluations),
                },
            )
            cell = row["cells"][position] or {
                "rewards": [],
                "episode": episode["id"],
                "successes": 0,
                "evaluation": evaluation.pk,
            }
            cell["rewards"].append(episode["reward"])
            cell["successes"] += int(episode["success"])
            row["cells"][position] = cell
    rows = []
    for row in by_episode.values():
        means = [sum(c["rewards"]) / len(c["rewards"]) if c else None for c in row["cells"]]
        for cell, mean in zip(row["cells"], means, strict=True):
            if cell:
                cell["mean"] = mean
        present = [m for m in means if m is not None]
        row["spread"] = (max(present) - min(present)) if len(present) > 1 else 0.0
        row["differs"] = row["spread"] > 1e-9
        rows.append(row)
    rows.sort(key=lambda r: (not r["differs"], -r["spread"], r["version"], r["seed"] or 0))
    return {"evaluations": evaluations, "rows": rows, "differing": sum(r["differs"] for r in rows)}


def _evaluation_work_item(evaluation: Evaluation) -> WorkItem:
    return WorkItem(kind="evaluation", pk=evaluation.pk, team_id=evaluation.team_id, name=evaluation.name,
                    url=evaluation.get_absolute_url(), status=evaluation.status,
                    detail=f"{evaluation.episodes_done}/{evaluation.episodes_total} episodes",
                    environment=str(evaluation.env_version), model=evaluation.model_name,
                    waiting_since=evaluation.created_at)  # fmt: skip


def evaluations_waiting(limit: int) -> list[WorkItem]:
    """Queued evaluations, oldest first, as the Workers page shows them."""
    queued = Evaluation.objects.filter(status=EvalStatus.QUEUED, run__isnull=True)
    return [_evaluation_work_item(e) for e in queued.select_related("env_version__environment").order_by(
        "created_at", "pk")[:limit]]  # fmt: skip


def evaluations_described(pks: list[int]) -> dict[int, WorkItem]:
    found = Evaluation.objects.filter(pk__in=pks).select_related("env_version__environment")
    return {e.pk: _evaluation_work_item(e) for e in found}
