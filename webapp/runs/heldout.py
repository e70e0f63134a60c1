"""Which seeds a run trains on, and the check that its held-out eval seeds are none of them. The trainer builds its
dataset with `training_row_count` and `training_seed`, so the check and the training agree by construction."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from webapp.evals.seeds import DEFAULT_EVAL_SEEDS, seeds_parse


def training_row_count(settings: dict[str, Any], prompt_rows: int, environments: int = 1) -> int:
    """Rows of a run's training dataset: its prompts, or the default prompt repeated (per environment when mixed)."""
    count = max(8, settings["per_device_train_batch_size"] * settings["gradient_accumulation_steps"] * 4)
    if environments > 1:
        return max(count * environments, prompt_rows)
    return prompt_rows or count


def training_seed(settings: dict[str, Any], row: dict[str, Any], index: int) -> Any:
    """A row's own `seed` column, else `seed x 1000 + row`."""
    return row.get("seed", settings["seed"] * 1000 + index)


def eval_seeds(settings: dict[str, Any]) -> list[int]:
    return seeds_parse(settings.get("eval_seeds") or DEFAULT_EVAL_SEEDS, field="eval_seeds")


def heldout_check(settings: dict[str, Any], rows: list[dict[str, Any]], environments: int = 1) -> None:
    """A ValidationError on `eval_seeds` when a held-out seed is also a training seed: an eval on seeds the policy
    trained on measures memory, not skill."""
    if not settings.get("eval_steps"):
        return
    held_out = set(eval_seeds(settings))
    count = training_row_count(settings, len(rows), environments)
    training = {training_seed(settings, rows[i] if i < len(rows) else {}, i) for i in range(count)}
    shared = sorted(s for s in held_out if s in training)
    if shared:
        shown = ", ".join(str(s) for s in shared[:5]) + (" …" if len(shared) > 5 else "")
        first, last = settings["seed"] * 1000, settings["seed"] * 1000 + count - 1
        raise ValidationError(
            {
                "eval_seeds": f"{len(shared)} held-out seed(s) are training seeds too ({shown}); this "
                f"run trains on its prompts' seed column or {first}-{last} (seed x 1000 + row)."
            }
        )
