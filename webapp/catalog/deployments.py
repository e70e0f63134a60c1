"""From a catalog version to a provider and a source: the one place Django settings meet envs.providers."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from envs.builtin import builtin_get
from envs.dependencies import environment_python
from envs.git_source import git_checkout
from envs.imported import openenv_folder
from envs.providers import EnvSource, Provider, ProvisionError, provider_for
from webapp.artifacts.layout import env_sources_dir, env_venvs_dir

PROVIDER_KINDS = ("process", "docker", "url")


def sources_cache_dir() -> Path:
    """Git mirrors, checkouts and folder snapshots: this host's cache (rebuilt from the source or the store)."""
    return env_sources_dir()


def venvs_cache_dir() -> Path:
    return env_venvs_dir()


def source_for(
    *,
    source_kind: str,
    source_ref: str,
    capacity: int = 64,
    commit: str = "",
    subdir: str = "",
    pinned: str = "",
    env: dict[str, str] | None = None,
    requirements: list[str] | None = None,
    progress: Callable[[str], None] = lambda m: None,
    mounts: tuple[str, ...] = (),
) -> EnvSource:
    """The provider's view of a source. A git source is checked out at `commit`; a folder with requirements gets
    the interpreter of their virtual environment (installed here once per requirement set). A folder pinned at a
    content hash runs as pinned, from the artifact store's snapshot where this host lacks it (catalog.folder_snapshots).
    """
    env = dict(env or {})
    if source_kind == "builtin":
        return EnvSource("folder", str(builtin_get(source_ref).folder), capacity=capacity, env=env, mounts=mounts)
    if source_kind in {"folder", "git"}:
        if source_kind == "git":
            folder = git_checkout(source_ref, commit, subdir, cache_dir=sources_cache_dir())
        elif pinned:
            from webapp.catalog.folder_snapshots import SnapshotMissing, pinned_folder

            try:
                folder = pinned_folder(source_ref, pinned)
            except SnapshotMissing as exc:
                raise ProvisionError(str(exc)) from exc
        else:
            folder = Path(source_ref).expanduser().resolve()
        # An ORS or Verifiers environment runs as what OpenEnv's importer makes of it (the same on every host).
        folder = openenv_folder(folder, cache_dir=sources_cache_dir())
        python = None
        if requirements:  # the process provider runs with it; docker installs the same set in its image
            python = environment_python(requirements, cache_dir=venvs_cache_dir(), progress=progress)
        return EnvSource("folder", str(folder), capacity=capacity, env=env, python=str(python) if python else None,
                         requirements=tuple(requirements or ()), mounts=mounts)  # fmt: skip
    return EnvSource(source_kind, source_ref, capacity=capacity, env=env, mounts=mounts)


def version_source(version, *, capacity: int | None = None, progress: Callable[[str], None] = lambda m: None):
    """The source of a catalog version with its settings, pinned commit, dependencies and data assets (pulled to
    this host from the store, read-only)."""
    from webapp.catalog.version_assets import AssetMissing, assets_for_server

    try:
        variables, mounts = assets_for_server(version)
    except AssetMissing as exc:
        raise ProvisionError(str(exc), cause=str(exc)) from exc
    return source_for(
        source_kind=version.source_kind,
        source_ref=version.source_ref,
        capacity=capacity if capacity is not None else version.capacity,
        commit=version.pinned_ref.removeprefix("git:") if version.source_kind == "git" else "",
        subdir=version.git_subdir,
        pinned=version.pinned_ref if version.source_kind == "folder" else "",
        env={**version.server_env, **variables},
        requirements=version_requirements(version),
        progress=progress,
        mounts=mounts,
    )


def version_requirements(version) -> list[str]:
    """What the version's folder declares plus what its settings add (a setting may change until a run uses it)."""
    dependencies = version.dependencies or {}
    declared = dependencies.get("declared", dependencies.get("requirements") or [])
    return list(dict.fromkeys([*declared, *(version.settings.get("requirements") or [])]))


def provider_for_version(version, wanted: str | None) -> str:
    """Where a version's servers start: a URL is only reachable as a URL and an image only runs in Docker; folders run
    where the user asks (or TRAINYARD_ENV_PROVIDER)."""
    if version.source_kind == "url":
        return "url"
    if version.source_kind == "image":
        return "docker"
    return wanted or settings.TRAINYARD_ENV_PROVIDER


def default_provider_kind(source_kind: str) -> str:
    if source_kind == "url":
        return "url"
    if source_kind == "image":
        return "docker"
    return settings.TRAINYARD_ENV_PROVIDER


def provider_get(kind: str, *, progress=None) -> Provider:
    """The provider of that kind, or ProvisionError when it cannot work here at all (no Docker engine)."""
    if kind not in PROVIDER_KINDS:
        raise ValueError(f"unknown provider {kind!r}; use one of {', '.join(PROVIDER_KINDS)}")
    if kind == "process":
        return provider_for("process", log_dir=Path(settings.DATA_DIR) / "env-logs")
    if kind == "docker":
        try:
            return provider_for(
                "docker",
                base_image=settings.TRAINYARD_DOCKER_BASE_IMAGE,
                network=settings.TRAINYARD_DOCKER_NETWORK,
                memory=os.environ.get("TRAINYARD_DOCKER_MEMORY", "1g"),
                progress=progress,
            )
        except Exception as exc:  # docker.errors.DockerException: no engine at DOCKER_HOST
            where = os.environ.get("DOCKER_HOST", "the default socket")
            cause = f"the Docker engine at {where} is unreachable ({type(exc).__name__})"
            raise ProvisionError(cause, cause=cause) from exc
    return provider_for("url")
