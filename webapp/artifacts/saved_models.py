"""The models a run saved: its final model (or LoRA adapter) and its checkpoints, as folders in the artifact store
(whichever host trained the run), with their sizes; and the model names that point at them (`run:12/final`,
`run:12/checkpoint-4`), which the run form, the CLI and the trainer accept as a model to start from. Runs are reached
through their team (`team.runs`): a name resolves only within the team that asks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from webapp.artifacts.layout import FINAL_MARKER, run_checkpoint_key, run_final_key, stored_checkpoints
from webapp.artifacts.store import artifact_store

NAME = re.compile(r"^run:(\d{1,12})/(final|checkpoint-\d{1,9})$")
FINAL = "final"


@dataclass(frozen=True)
class SavedModel:
    run_id: int
    name: str  # "final" or "checkpoint-N"
    step: int
    key: str  # its folder in the artifact store
    size_bytes: int
    adapter: bool  # a LoRA adapter: the base model is needed to use it (or a merged export)

    @property
    def model_name(self) -> str:
        return f"run:{self.run_id}/{self.name}"

    @property
    def kind(self) -> str:
        return "LoRA adapter" if self.adapter else "full model"


def _saved(run, name: str, key: str, step: int) -> SavedModel:
    files = dict(artifact_store().files(key))
    return SavedModel(run_id=run.pk, name=name, step=step, key=key, size_bytes=sum(files.values()),
                      adapter="adapter_config.json" in files)  # fmt: skip


def saved_models(run) -> list[SavedModel]:
    """A run's saved models: final first, then checkpoints newest first. Only complete folders: a checkpoint has its
    trainer_state.json (uploaded last), the final model its trainyard.json (uploaded after the weights)."""
    found = []
    final = run_final_key(run.pk)
    record = artifact_store().read_text(f"{final}/{FINAL_MARKER}", default="")
    if record:
        try:
            step = json.loads(record).get("step", run.step)
        except ValueError:
            step = run.step
        found.append(_saved(run, FINAL, final, step))
    checkpoints = stored_checkpoints(run.pk)
    return found + [_saved(run, name, run_checkpoint_key(run.pk, name), step) for step, name in checkpoints]


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
