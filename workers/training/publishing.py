"""What the trainer saves, put in the artifact store as soon as it is whole (rank 0): each checkpoint TRL writes,
the final model, TRL's config. Another host resumes the run or starts a new one from them; the run page lists and
serves them from there. And the way back: a resume on a host that lacks the checkpoint pulls it first."""

from __future__ import annotations

import fcntl
from pathlib import Path

from transformers import TrainerCallback

from webapp.artifacts.layout import (
    CHECKPOINT_MARKER,
    FINAL_MARKER,
    run_checkpoint_key,
    run_checkpoints_dir,
    run_final_key,
    run_key,
    stored_checkpoints,
)
from webapp.artifacts.store import artifact_store


class CheckpointPublisher(TrainerCallback):
    """After TRL saved (and rotated) its checkpoints: the new one goes to the store, trainer_state.json last, and the
    store keeps as many as TRL does (`save_total_limit`)."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        name = f"checkpoint-{state.global_step}"
        folder = Path(args.output_dir) / name
        if (folder / CHECKPOINT_MARKER).exists():
            checkpoint_publish(self.run_id, folder)
        if args.save_total_limit:
            store = artifact_store()
            for _step, old in stored_checkpoints(self.run_id)[args.save_total_limit :]:
                store.delete(run_checkpoint_key(self.run_id, old))


def checkpoint_publish(run_id: int, folder: Path) -> None:
    artifact_store().put_tree(folder, run_checkpoint_key(run_id, folder.name), marker=CHECKPOINT_MARKER)


def final_publish(run_id: int, folder: Path) -> None:
    """The final model replaces any earlier one whole: the old one goes first, its marker with it."""
    store = artifact_store()
    store.delete(run_final_key(run_id))
    store.put_tree(folder, run_final_key(run_id), marker=FINAL_MARKER)


def file_publish(run_id: int, local: Path) -> None:
    artifact_store().put_file(local, run_key(run_id, local.name))


def run_files_forget(run_id: int) -> None:
    """A run starting from scratch: what a run of this id left in the store before (a reset database) is not its."""
    store = artifact_store()
    store.delete(run_key(run_id, "checkpoints"))
    store.delete(run_final_key(run_id))


def checkpoint_local(run_id: int, resume_from: str) -> str | None:
    """The local folder to resume from. `resume_from` is a checkpoint's name (`checkpoint-N`), pulled from the
    store when this host lacks it; an absolute folder (what older records hold) is taken as it is when it exists."""
    if not resume_from:
        return None
    if resume_from.startswith("/"):
        return resume_from if Path(resume_from).exists() else None
    local = run_checkpoints_dir(run_id) / resume_from
    if (local / CHECKPOINT_MARKER).exists():
        return str(local)
    local.parent.mkdir(parents=True, exist_ok=True)
    with open(local.parent / f".{resume_from}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the ranks of one host pull it once
        if not (local / CHECKPOINT_MARKER).exists():
            print(f"pulling {resume_from} from the artifact store to resume", flush=True)
            artifact_store().get_tree(run_checkpoint_key(run_id, resume_from), local)
    return str(local)
