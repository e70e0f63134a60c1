"""Where every file Trainyard keeps lies, in one place.

Two roots:
- the data folder (`TRAINYARD_DATA_DIR`): what runs and evaluations wrote and nobody can make again — a run's trainer
  log, checkpoints and final model, an evaluation's log, the logs of long-lived processes;
- the cache folder (`TRAINYARD_CACHE_DIR`, by default `cache/` inside the data folder): what can be built again and
  is named by its content — the tiny model, warm starts, merged adapters, environment sources and virtual
  environments, TRL's field table. Several data folders (a demo and the tests) may share one cache.

A run's folder:

    runs/<id>/trainer.log           what the trainer printed (the run page's log)
    runs/<id>/failure.txt           why the trainer failed, written by the trainer for the worker
    runs/<id>/lost_sessions.txt     environment sessions lost to a hung step (the slot keeper reads it)
    runs/<id>/trainer_config.json   TRL's whole config as trained
    runs/<id>/checkpoints/checkpoint-N/   complete once trainer_state.json is written (TRL writes it last)
    runs/<id>/final/                the model as training left it, complete once trainyard.json is written
    runs/<id>/merged/<name>/        a LoRA adapter of the run merged into its base (a later run started from it)

An evaluation's folder: `evals/<id>/evaluator.log`, `failure.txt`, `trainer/` (TRL's output folder, unused).
"""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings


def data_dir() -> Path:
    return Path(settings.DATA_DIR)


def cache_dir() -> Path:
    return Path(settings.CACHE_DIR)


# -- a run ---------------------------------------------------------------------------------------------------------
def run_dir(run_id: int) -> Path:
    return data_dir() / "runs" / str(run_id)


def run_log(run_id: int) -> Path:
    return run_dir(run_id) / "trainer.log"


def run_failure_file(run_id: int) -> Path:
    return run_dir(run_id) / "failure.txt"


def run_lost_sessions_file(run_id: int) -> Path:
    return run_dir(run_id) / "lost_sessions.txt"


def run_trainer_config_file(run_id: int) -> Path:
    return run_dir(run_id) / "trainer_config.json"


def run_checkpoints_dir(run_id: int) -> Path:
    return run_dir(run_id) / "checkpoints"


def run_final_dir(run_id: int) -> Path:
    return run_dir(run_id) / "final"


def run_merged_dir(run_id: int, name: str) -> Path:
    """A LoRA adapter the run saved (`final`, `checkpoint-N`), merged into its base once for a run to start from."""
    return run_dir(run_id) / "merged" / name


def complete_checkpoints(run_id: int) -> list[tuple[int, Path]]:
    """(step, folder) of every checkpoint written completely (TRL writes trainer_state.json last), newest first."""
    folder = run_checkpoints_dir(run_id)
    if not folder.exists():
        return []
    found = []
    for path in folder.glob("checkpoint-*"):
        match = re.fullmatch(r"checkpoint-(\d+)", path.name)
        if match and (path / "trainer_state.json").exists():
            found.append((int(match.group(1)), path))
    return sorted(found, reverse=True)


def latest_checkpoint(run_id: int) -> Path | None:
    """The checkpoint with the highest step that was written completely."""
    found = complete_checkpoints(run_id)
    return found[0][1] if found else None


# -- an evaluation -------------------------------------------------------------------------------------------------
def evaluation_dir(evaluation_id: int) -> Path:
    return data_dir() / "evals" / str(evaluation_id)


def evaluation_log(evaluation_id: int) -> Path:
    return evaluation_dir(evaluation_id) / "evaluator.log"


def evaluation_failure_file(evaluation_id: int) -> Path:
    return evaluation_dir(evaluation_id) / "failure.txt"


# -- long-lived processes ------------------------------------------------------------------------------------------
def process_logs_dir() -> Path:
    """Standby trainers' logs."""
    return data_dir() / "logs"


def env_logs_dir() -> Path:
    """Environment servers' logs (the process provider)."""
    return data_dir() / "env-logs"


# -- the cache -----------------------------------------------------------------------------------------------------
def models_dir() -> Path:
    """The tiny model, warm starts and merged adapters (webapp.artifacts.model_names names them)."""
    return cache_dir() / "models"


def env_sources_dir() -> Path:
    """Git mirrors and the commits materialised from them (envs.git_source)."""
    return cache_dir() / "env-sources"


def env_venvs_dir() -> Path:
    """A virtual environment per requirement set (envs.dependencies)."""
    return cache_dir() / "env-venvs"


def trl_fields_file(trl_version: str) -> Path:
    """TRL's GRPOConfig fields, read once per TRL version."""
    return cache_dir() / f"grpo-config-fields-trl-{trl_version}.json"
