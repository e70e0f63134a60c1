"""A run's dataset rows as TRL takes them: its prompts (or the environment's default prompt over seeds) for training,
and its held-out seeds for evals during training."""

from __future__ import annotations

from typing import Any


def build_dataset_rows(run, tool_names: list[str], mixed: dict[str, tuple[str, list[str]]] | None = None
                       ) -> list[dict[str, Any]]:  # fmt: skip
    """The run's prompts as conversational rows; with none, the environment's default prompt over seeds. A mixed run
    (`mixed`: key → (description, tool names) of each environment) gets an `environment` column that routes each
    row, in proportion to the mixture weights, and each environment's own default prompt."""
    from envs.prompts import default_prompt
    from webapp.runs.heldout import training_row_count, training_seed
    from webapp.runs.mixture import mixture_rows
    from webapp.runs.selectors import run_prompts

    settings = run.config
    rows = run_prompts(run=run)
    count = training_row_count(settings, len(rows), len(mixed or {}) or 1)
    if mixed:
        keys = mixture_rows(run.environments, count)
        if not rows:
            rows = [{"prompt": default_prompt(description=mixed[key][0], tool_names=mixed[key][1]),
                     "environment": key} for key in keys]  # fmt: skip
        else:
            rows = [{**row, "environment": row.get("environment") or keys[i]} for i, row in enumerate(rows)]
    elif not rows:
        text = default_prompt(description=run.env_version.environment.description, tool_names=tool_names)
        rows = [{"prompt": text} for _ in range(count)]
    out = []
    for i, row in enumerate(rows):
        row = dict(row)
        row["prompt"] = [{"role": "user", "content": row["prompt"]}]
        row["seed"] = training_seed(settings, row, i)
        out.append(row)
    return out


def build_eval_rows(run, tool_names: list[str], mixed: dict[str, tuple[str, list[str]]] | None = None
                    ) -> list[dict[str, Any]]:  # fmt: skip
    """The held-out rows of a run's evals during training: every held-out seed with the run's prompts in turn (or
    the default prompt), for each environment of a mixed run."""
    from envs.prompts import default_prompt
    from webapp.runs.heldout import eval_seeds
    from webapp.runs.selectors import run_prompts

    seeds = eval_seeds(run.config)
    prompts = [row["prompt"] for row in run_prompts(run=run)]
    if mixed:
        entries = [(key, default_prompt(description=description, tool_names=names))
                   for key, (description, names) in mixed.items()]  # fmt: skip
    else:
        entries = [(None, default_prompt(description=run.env_version.environment.description, tool_names=tool_names))]
    rows = []
    for key, default_text in entries:
        for i, seed in enumerate(seeds):
            text = prompts[i % len(prompts)] if prompts else default_text
            rows.append({"prompt": [{"role": "user", "content": text}], "seed": seed,
                         **({"environment": key} if key else {})})  # fmt: skip
    return rows
