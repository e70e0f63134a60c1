"""The models a run saved: its final model (or LoRA adapter) and its checkpoints, as folders in the run's data
folder, with their sizes; and the model names that point at them (`run:12/final`, `run:12/checkpoint-4`), which the
run form, the CLI and the trainer accept as a model to start from. Runs are reached through their team
(`team.runs`): a name resolves only within the team that asks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ValidationError

from webapp.artifacts.layout import complete_checkpoints, run_final_dir

NAME = re.compile(r"^run:(\d{1,12})/(final|checkpoint-\d{1,9})$")
FINAL = "final"


@dataclass(frozen=True)
class SavedModel:
    run_id: int
    name: str  # "final" or "checkpoint-N"
    step: int
    path: Path
    size_bytes: int
    adapter: bool  # a LoRA adapter: the base model is needed to use it (or a merged export)

    @property
    def model_name(self) -> str:
        return f"run:{self.run_id}/{self.name}"

    @property
    def kind(self) -> str:
        return "LoRA adapter" if self.adapter else "full model"


def _folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _saved(run, name: str, path: Path, step: int) -> SavedModel:
    adapter = (path / "adapter_config.json").exists()
    return SavedModel(run_id=run.pk, name=name, step=step, path=path, size_bytes=_folder_size(path), adapter=adapter)


def saved_models(run) -> list[SavedModel]:
    """A run's saved models: final first, then checkpoints newest first. Only complete folders: a checkpoint has its
    trainer_state.json (written last), the final model its trainyard.json (written after the weights)."""
    found = []
    final = run_final_dir(run.pk)
    if (final / "trainyard.json").exists():
        step = json.loads((final / "trainyard.json").read_text()).get("step", run.step)
        found.append(_saved(run, FINAL, final, step))
    return found + [_saved(run, path.name, path, step) for step, path in complete_checkpoints(run.pk)]


def saved_model_get(run, name: str) -> SavedModel | None:
    return next((m for m in saved_models(run) if m.name == name), None)


def saved_model_resolve(model_name: str, *, team) -> SavedModel | None:
    """The saved model a `run:ID/NAME` model name points at, if its run is the team's; None for other names.
    Raises a field error when the name has that form but points at nothing the team may use."""
    match = NAME.match(model_name.strip())
    if not match:
        return None
    run = team.runs.filter(pk=int(match.group(1))).first()
    if run is None:
        raise ValidationError({"model_name": f"{model_name}: no run {match.group(1)} in your team."})
    model = saved_model_get(run, match.group(2))
    if model is None:
        names = ", ".join(m.name for m in saved_models(run)) or "none yet"
        raise ValidationError({"model_name": f"{model_name}: run {run.name} saved no {match.group(2)} (it has: "
                                             f"{names})."})  # fmt: skip
    return model


def team_saved_models(*, team, limit: int = 30) -> list[tuple[str, str]]:
    """(model name, note) for the run form's model choices: the final models and last checkpoints of the team's
    latest finished runs."""
    choices = []
    for run in team.runs.filter(step__gt=0).order_by("-created_at")[:limit]:
        models = saved_models(run)
        for model in models[:2]:
            choices.append((model.model_name, f"{model.kind} of {run.name}, step {model.step}"))
    return choices
