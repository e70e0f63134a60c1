"""The environments that ship with Trainyard, each a self-contained OpenEnv folder beside this file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

ENVS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class BuiltinEnvironment:
    slug: str
    folder: Path
    description: str
    tags: tuple[str, ...]
    version: str


def read_manifest(folder: Path) -> dict:
    manifest = folder / "openenv.yaml"
    if not manifest.exists():
        raise FileNotFoundError(f"{folder} has no openenv.yaml")
    data = yaml.safe_load(manifest.read_text()) or {}
    if not isinstance(data, dict) or "name" not in data:
        raise ValueError(f"{manifest} must be a mapping with a name")
    return data


def declares_randomness(manifest: dict) -> bool:
    """Whether an environment says its episodes vary under one seed. OpenEnv's place for it is the `validation:`
    block's reward variance tolerance (variance-mode determinism); `stochastic: true` is Trainyard's older key."""
    validation = manifest.get("validation")
    reward = validation.get("reward") if isinstance(validation, dict) else None
    tolerance = reward.get("variance_tolerance") if isinstance(reward, dict) else None
    return bool(manifest.get("stochastic")) or (isinstance(tolerance, int | float) and tolerance > 0)


def builtin_environments() -> list[BuiltinEnvironment]:
    found = []
    for manifest in sorted(ENVS_DIR.glob("*/openenv.yaml")):
        data = read_manifest(manifest.parent)
        found.append(
            BuiltinEnvironment(
                slug=data["name"],
                folder=manifest.parent,
                description=data.get("description", ""),
                tags=tuple(data.get("tags", [])),
                version=str(data.get("version", "1.0.0")),
            )
        )
    return found


def builtin_get(slug: str) -> BuiltinEnvironment:
    for env in builtin_environments():
        if env.slug == slug:
            return env
    raise KeyError(slug)
