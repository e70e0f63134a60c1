"""From a catalog version to a provider and a source: the one place Django settings meet envs.providers."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from envs.builtin import builtin_get
from envs.providers import EnvSource, Provider, provider_for

PROVIDER_KINDS = ("process", "docker", "url")


def source_for(*, source_kind: str, source_ref: str, capacity: int = 64) -> EnvSource:
    if source_kind == "builtin":
        return EnvSource("folder", str(builtin_get(source_ref).folder), capacity=capacity)
    if source_kind == "folder":
        return EnvSource("folder", str(Path(source_ref).expanduser().resolve()), capacity=capacity)
    return EnvSource(source_kind, source_ref, capacity=capacity)


def default_provider_kind(source_kind: str) -> str:
    if source_kind == "url":
        return "url"
    if source_kind == "image":
        return "docker"
    return settings.TRAINYARD_ENV_PROVIDER


def provider_get(kind: str, *, progress=None) -> Provider:
    if kind not in PROVIDER_KINDS:
        raise ValueError(f"unknown provider {kind!r}; use one of {', '.join(PROVIDER_KINDS)}")
    if kind == "process":
        return provider_for("process", log_dir=Path(settings.DATA_DIR) / "env-logs")
    if kind == "docker":
        return provider_for(
            "docker",
            base_image=settings.TRAINYARD_DOCKER_BASE_IMAGE,
            network=settings.TRAINYARD_DOCKER_NETWORK,
            memory=os.environ.get("TRAINYARD_DOCKER_MEMORY", "1g"),
            progress=progress,
        )
    return provider_for("url")
