"""The one place that names channel-layer groups."""

from __future__ import annotations


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def team_runs_group(team_id: int) -> str:
    return f"team.{team_id}.runs"
