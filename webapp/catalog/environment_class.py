"""The one place a catalog version becomes the environment class TRL's `environment_factory` takes (envs.adapter):
for training, for an evaluation and for a warm start alike, with the tools the version offers a model, its reset
columns, the observation fields the model reads, the action fields fixed per version and its reward rule. Only the
trainer, the evaluator and a warm start call it (in their own processes); it imports nothing heavy."""

from __future__ import annotations

from pathlib import Path


def version_env_class(version, *, endpoints: list[str], step_timeout: float, lost_sessions_file: Path | None = None):
    """The adapter class of `version` over the servers at `endpoints`. `lost_sessions_file`: where sessions lost to
    a hung step are written for the worker's slot keeper (a run's; evaluations and warm starts keep none)."""
    from envs.adapter import tool_env_class

    env_class = tool_env_class(
        name=version.environment.slug, tools=version.offered_tools, endpoints=endpoints, step_timeout=step_timeout,
        reset_columns=version.settings.get("reset_args"), observation_fields=version.settings.get("observation_fields"),
        fixed_arguments=version.fixed_fields, reward_rule=version.reward_rule,
    )  # fmt: skip
    if lost_sessions_file is not None:
        env_class.lost_sessions_file = str(lost_sessions_file)
    return env_class
