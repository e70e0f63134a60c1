"""A log this host writes (a trainer's, an evaluator's), copied to the artifact store as it grows, so that the run
page on the web host reads it wherever the work ran (webapp/artifacts/store.py)."""

from __future__ import annotations

from pathlib import Path

from webapp.artifacts.store import artifact_store


class PublishedLog:
    def __init__(self, local: Path, key: str) -> None:
        self.local, self.key = local, key
        self.known: int | None = None  # bytes the store holds, as far as this host knows

    def pull(self) -> None:
        """Start from the store's copy when this host has none: a run resumed here after another host ran it
        keeps one log, the first attempt's lines first."""
        if self.local.exists():
            return
        store = artifact_store()
        if store.size(self.key):
            self.local.parent.mkdir(parents=True, exist_ok=True)
            self.local.write_bytes(store.read_bytes(self.key))

    def publish(self) -> None:
        if not self.local.exists():
            return
        store = artifact_store()
        if self.known is None:
            self.known = store.size(self.key) or 0
        self.known = store.append_file(self.local, self.key, self.known)
