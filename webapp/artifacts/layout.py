"""Where every file Trainyard keeps lies, in one place.

Three roots:
- the artifact store (`TRAINYARD_ARTIFACTS`, webapp/artifacts/store.py): every file another process or host reads.
  Its keys mirror the data folder's paths (`runs/<id>/trainer.log`, `runs/<id>/checkpoints/checkpoint-N/`,
  `runs/<id>/final/`, `evals/<id>/evaluator.log`) plus `models/` (the tiny model, warm starts) and
  `env-sources/folder/<sha256>.tar.gz` (a folder environment as it was pinned). Pages and other hosts read only
  these keys; the `*_key` functions below name them;
- the data folder (`TRAINYARD_DATA_DIR`): a host's own working space — where a worker's trainer writes a run's log,
  checkpoints and final model before they are published to the store, an evaluation's log, the logs of long-lived
  processes;
- the cache folder (`TRAINYARD_CACHE_DIR`, by default `cache/` inside the data folder): what this host can build or
  pull again, named by its content — the tiny model, warm starts, saved models pulled from the store and adapters
  merged here, environment sources, folder snapshots and virtual environments, TRL's field table. Several data
  folders (a demo and the tests) may share one cache.

A run's folder on the host that trains it:

    runs/<id>/trainer.log           what the trainer printed (the run page's log)
    runs/<id>/failure.txt           why the trainer failed, written by the trainer for the worker
    runs/<id>/lost_sessions.txt     environment sessions lost to a hung step (the slot keeper reads it)
    runs/<id>/trainer_config.json   TRL's whole config as trained
    runs/<id>/checkpoints/checkpoint-N/   complete once trainer_state.json is written (TRL writes it last)
    runs/<id>/final/                the model as training left it, complete once trainyard.json is written

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
def run_key(run_id: int, *parts: str) -> str:
    """A run's files in the artifact store: `run_key(12, "final")` is `runs/12/final`."""
    return "/".join(("runs", str(run_id), *parts))


def run_log_key(run_id: int) -> str:
    return run_key(run_id, "trainer.log")


def run_node_log_key(run_id: int, node: int) -> str:
    """The trainer log of node `node` (> 0) of a run across several Slurm nodes; node 0's is `run_log_key`."""
    return run_key(run_id, f"trainer-node{node}.log")


def run_failure_key(run_id: int) -> str:
    """The trainer's own account of its failure, for a worker that did not run it (a Slurm job's)."""
    return run_key(run_id, "failure.txt")


def run_checkpoint_key(run_id: int, name: str) -> str:
    return run_key(run_id, "checkpoints", name)


def run_final_key(run_id: int) -> str:
    return run_key(run_id, "final")


CHECKPOINT_MARKER = "trainer_state.json"  # TRL writes it last; the store gets it last
FINAL_MARKER = "trainyard.json"  # written after the weights; the store gets it last
CHECKPOINT_NAME = re.compile(r"checkpoint-(\d+)")


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


def stored_checkpoints(run_id: int) -> list[tuple[int, str]]:
    """(step, name) of every checkpoint of the run that reached the store whole, newest first."""
    from webapp.artifacts.store import artifact_store

    store = artifact_store()
    found = []
    for name in store.listdir(run_key(run_id, "checkpoints")):
        match = CHECKPOINT_NAME.fullmatch(name)
        if match and store.exists(f"{run_checkpoint_key(run_id, name)}/{CHECKPOINT_MARKER}"):
            found.append((int(match.group(1)), name))
    return sorted(found, reverse=True)


def latest_checkpoint(run_id: int) -> str | None:
    """The name (`checkpoint-N`) of the run's stored checkpoint with the highest step."""
    found = stored_checkpoints(run_id)
    return found[0][1] if found else None


# -- an evaluation -------------------------------------------------------------------------------------------------
def evaluation_log_key(evaluation_id: int) -> str:
    return f"evals/{evaluation_id}/evaluator.log"


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


def model_key(folder: Path) -> str:
    """A model Trainyard made (under models_dir()) as a key of the store: `models/<its path there>`."""
    return "models/" + folder.relative_to(models_dir()).as_posix()


def pulled_dir(key: str) -> Path:
    """Where this host keeps its copy of a folder pulled from the store (a run's saved model, say)."""
    return cache_dir() / "pulled" / key


def folder_snapshot_key(pinned: str) -> str:
    """A folder environment as it was pinned (`sha256:...`), a .tar.gz in the store."""
    return f"env-sources/folder/{pinned.removeprefix('sha256:')}.tar.gz"


def asset_key(sha256: str) -> str:
    """A version's data asset (a file or folder, envs.data_assets), a .tar.gz in the store by content."""
    return f"env-assets/{sha256}.tar.gz"


def asset_dir(sha256: str) -> Path:
    """Where this host keeps an asset, extracted once and read-only (its file or folder lies inside, by name)."""
    return cache_dir() / "env-assets" / sha256[:32]


def env_sources_dir() -> Path:
    """Git mirrors and the commits materialised from them (envs.git_source)."""
    return cache_dir() / "env-sources"


def env_venvs_dir() -> Path:
    """A virtual environment per requirement set (envs.dependencies)."""
    return cache_dir() / "env-venvs"


def trl_fields_file(trl_version: str) -> Path:
    """TRL's GRPOConfig fields, read once per TRL version."""
    return cache_dir() / f"grpo-config-fields-trl-{trl_version}.json"
