"""The models Trainyard makes (the tiny model, warm starts) shared between hosts through the artifact store: a host
that lacks one pulls it rather than building it again (minutes of CPU), and a host that built one publishes it.

A model in the store is whole once its recipe file is there (uploaded last), and it serves only a host whose code
would build the same model (the recipe file's fingerprint: workers.models.tiny.record_current)."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path

from webapp.artifacts.layout import model_key
from webapp.artifacts.store import artifact_store
from workers.models.tiny import model_current, record_current

MARKER = "trainyard-recipe.json"
Progress = Callable[[str, float], None]


def _stored_current(key: str) -> bool:
    record = artifact_store().read_text(f"{key}/{MARKER}", default="")
    return bool(record) and record_current(record)


def model_publish(folder: Path) -> None:
    """Put a model this host built into the store (once: a current copy there is left alone)."""
    key = model_key(folder)
    if not _stored_current(key):
        artifact_store().put_tree(folder, key, marker=MARKER)


def model_pull(target: Path, progress: Progress = lambda m, f: None) -> bool:
    """Bring a current copy of the model from the store to `target`; False when the store has none."""
    key = model_key(target)
    if not _stored_current(key):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several processes of one host pull it once
        if not model_current(target):
            size = artifact_store().tree_size(key)
            progress(f"pulling {target.name} ({size / 1e6:.0f} MB) from the artifact store", 0.05)
            artifact_store().get_tree(key, target)
    return model_current(target)


def shared_model(target: Path, build: Callable[[], Path], progress: Progress = lambda m, f: None) -> Path:
    """`target` as this host has it: already here, else pulled from the store, else built here and published."""
    if not model_current(target) and not model_pull(target, progress):
        target = build()
    model_publish(target)
    return target


def tiny_model(progress: Progress = lambda m, f: None) -> Path:
    """The tiny model on this host, pulled from the store when another host built it."""
    from webapp.artifacts.model_names import tiny_model_dir
    from workers.models.tiny import ensure_tiny_model

    return shared_model(tiny_model_dir(), lambda: ensure_tiny_model(progress=progress), progress)


def warm_start(version, progress: Progress = lambda m, f: None) -> Path:
    """A version's warm start on this host: here already, pulled, or made here (on the tiny model, itself pulled
    when another host built it) and published."""
    from webapp.artifacts.model_names import warmstart_dir
    from workers.models.warmstart import warmstart_version

    def build() -> Path:
        tiny_model(progress)
        return warmstart_version(version, progress=progress)

    return shared_model(warmstart_dir(version), build, progress)
