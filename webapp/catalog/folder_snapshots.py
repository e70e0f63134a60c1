"""A folder environment as it was pinned, kept in the artifact store: the host that adds a folder uploads a .tar.gz
of exactly the files its content hash covers, and a worker on another host — where the folder's path means nothing —
runs that snapshot, extracted once into its own cache. A host that has the folder itself, unchanged, runs it in
place."""

from __future__ import annotations

import fcntl
import shutil
import tarfile
import tempfile
from pathlib import Path

from envs.providers.base import content_hash
from webapp.artifacts.layout import env_sources_dir, folder_snapshot_key
from webapp.artifacts.store import artifact_store


class SnapshotMissing(RuntimeError):
    """Neither the folder (as pinned) nor its snapshot is to be had on this host."""


def _files(folder: Path) -> list[Path]:
    """What the content hash covers (envs.providers.base.content_hash)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def snapshot_publish(folder: Path, pinned: str) -> None:
    """Upload the folder's snapshot once per content (`pinned` is `sha256:<content hash>`)."""
    store, key = artifact_store(), folder_snapshot_key(pinned)
    if store.exists(key):
        return
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "snapshot.tar.gz"
        with tarfile.open(archive, "w:gz", dereference=True) as tar:  # what the hash read, links followed
            for path in _files(folder):
                tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
        store.put_file(archive, key)


def pinned_folder(source_ref: str, pinned: str) -> Path:
    """The folder to run for a version pinned at `pinned`: the folder itself when this host has it unchanged, else
    the store's snapshot, extracted once into this host's cache."""
    local = Path(source_ref).expanduser().resolve()
    if not pinned.startswith("sha256:") or (local.is_dir() and "sha256:" + content_hash(local) == pinned):
        return local
    target = env_sources_dir() / "folders" / pinned.removeprefix("sha256:")[:32]
    if target.is_dir():
        return target
    store, key = artifact_store(), folder_snapshot_key(pinned)
    if not store.exists(key):
        changed = "has changed since it was added" if local.is_dir() else "is not on this host"
        raise SnapshotMissing(f"the folder {source_ref} {changed}, and the artifact store has no snapshot of it as "
                              f"pinned ({pinned[:19]}…): add the version again from the folder")  # fmt: skip
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            with store.open(key) as handle, tarfile.open(fileobj=handle, mode="r|gz") as tar:
                tar.extractall(partial, filter="data")  # no absolute paths, links out or devices
            partial.rename(target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target
