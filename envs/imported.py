"""Environments written for other frameworks (OpenReward's ORS, Prime Intellect's Verifiers), made OpenEnv folders by
OpenEnv's own importers (`openenv.cli.importers`, what `openenv import` runs): detected from the source's Python
files without importing them, then generated as an OpenEnv folder (a server that wraps the source as MCP tools, and
its requirements, the framework's package among them). The generated folder is kept per source content, so every
host generates the same one; Trainyard then installs its requirements like any folder's, and a framework package
that cannot be installed here fails the add with the package's name and pip's reason.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import tempfile
from pathlib import Path

from envs.providers.base import content_hash


class ImportFailed(Exception):
    """A source an importer recognised could not be made an OpenEnv folder; the message says which and why."""


def _importers() -> list:
    from openenv.cli.importers import DEFAULT_IMPORTERS

    return list(DEFAULT_IMPORTERS)


def detected_framework(folder: Path) -> tuple[str, list] | None:
    """(the framework, what its importer detected) for a folder that is not an OpenEnv folder; None otherwise."""
    folder = Path(folder)
    if (folder / "server" / "app.py").exists() or not folder.is_dir():
        return None
    for importer in _importers():
        found = importer.detect(folder)
        if found:
            return importer.source_type, found
    return None


def openenv_folder(folder: Path, *, cache_dir: Path) -> Path:
    """The OpenEnv folder to run for `folder`: itself, or what OpenEnv's importer generates from it (once per content
    and framework, under `cache_dir`)."""
    folder = Path(folder)
    detected = detected_framework(folder)
    if detected is None:
        return folder
    framework, found = detected
    importer = next(i for i in _importers() if i.source_type == framework)
    env_name = re.sub(r"\W", "_", folder.name.lower()).strip("_") or "imported"
    env_name = env_name if not env_name[0].isdigit() else f"env_{env_name}"
    root = Path(cache_dir) / "imported" / f"{framework}-{content_hash(folder, framework)[:16]}"
    target = root / env_name
    if (target / "server" / "app.py").exists():
        return target
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "server" / "app.py").exists():
            return target
        partial = Path(tempfile.mkdtemp(prefix=f".{root.name}.", dir=root.parent))
        try:
            importer.generate(source=folder, destination=partial / env_name, env_name=env_name, detected=found[0])
        except Exception as exc:  # the importer's own failure, named with the framework
            shutil.rmtree(partial, ignore_errors=True)
            raise ImportFailed(f"OpenEnv's {framework} importer could not convert {folder.name}: "
                               f"{type(exc).__name__}: {exc}") from exc  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
        partial.rename(root)
    return target
