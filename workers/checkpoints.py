"""Where a run's checkpoints live and which one a resume starts from."""

from __future__ import annotations

import re
from pathlib import Path


def checkpoint_dir(artifact_dir: Path) -> Path:
    return Path(artifact_dir) / "checkpoints"


def complete_checkpoints(artifact_dir: Path) -> list[tuple[int, Path]]:
    """(step, folder) of every checkpoint written completely (TRL writes trainer_state.json last), newest first."""
    folder = checkpoint_dir(artifact_dir)
    if not folder.exists():
        return []
    found = []
    for path in folder.glob("checkpoint-*"):
        match = re.fullmatch(r"checkpoint-(\d+)", path.name)
        if match and (path / "trainer_state.json").exists():
            found.append((int(match.group(1)), path))
    return sorted(found, reverse=True)


def latest_checkpoint(artifact_dir: Path) -> Path | None:
    """The checkpoint with the highest step that was written completely."""
    found = complete_checkpoints(artifact_dir)
    return found[0][1] if found else None
