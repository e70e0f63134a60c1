"""Inspecting a source before it becomes a version: fetch it (git), install what it declares, start it once, ask it
what it is, and measure what it really does (capacity, seeds). Nothing is saved here; errors name the form field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from envs.builtin import builtin_environments, builtin_get, declares_randomness, read_manifest
from envs.data_assets import GIVE_WITH_ADD, missing_data
from envs.dependencies import DependencyError, declared_requirements, environment_python, missing_requirements
from envs.git_source import GitSourceError, git_resolve
from envs.imported import ImportFailed, detected_framework, openenv_folder
from envs.measure import CapacityMeasure, measure_capacity, measure_seeding
from envs.providers import ProvisionError
from envs.providers.base import content_hash
from envs.rewards import RewardRuleError, declared_rule
from webapp.catalog.deployments import (
    default_provider_kind,
    provider_get,
    source_for,
    sources_cache_dir,
    venvs_cache_dir,
)
from webapp.catalog.discovery import Discovered, DiscoveryError, discover
from webapp.catalog.models import SourceKind


@dataclass
class Inspection:
    discovered: Discovered
    pinned: str
    capacity: CapacityMeasure | None = None
    seeding: str = "unknown"
    dependencies: dict[str, Any] = field(default_factory=dict)
    started_with: int | None = None  # the capacity the server accepted to start with (lower than asked, or None)


# Built-in folders are identified by their content hash: what one inspection found holds for the process's life.
_builtin_inspections: dict[str, Inspection] = {}


def _pin(source_kind: str, folder: Path | None, commit: str, discovered: Discovered, provider, source_ref: str) -> str:
    if source_kind == SourceKind.GIT:
        return "git:" + commit
    if folder is not None:
        return "sha256:" + content_hash(folder)
    if source_kind == SourceKind.IMAGE:
        image = provider.client.images.get(source_ref)
        return (image.attrs.get("RepoDigests") or [image.id])[0]
    return "server:" + str(discovered.metadata.get("version") or "unknown")


def _folder_of(source_kind: str, source_ref: str, git_ref: str, git_subdir: str) -> tuple[Path | None, str]:
    """The environment's folder on this machine (None for images and URLs) and, for git, the pinned commit."""
    if source_kind == SourceKind.BUILTIN:
        try:
            return builtin_get(source_ref).folder, ""
        except KeyError:
            raise ValidationError({"source_ref": f"There is no built-in environment {source_ref!r}."}) from None
    if source_kind == SourceKind.FOLDER:
        return Path(source_ref).expanduser().resolve(), ""
    if source_kind == SourceKind.GIT:
        try:
            commit = git_resolve(source_ref, git_ref, cache_dir=sources_cache_dir())
            source = source_for(source_kind="git", source_ref=source_ref, commit=commit, subdir=git_subdir)
        except GitSourceError as exc:
            raise ValidationError({"source_ref": f"The repository could not be read: {exc}"}) from exc
        return Path(source.reference), commit
    return None, ""


def _dependencies(folder: Path, extra: list[str], progress: Callable[[str], None]) -> dict[str, Any]:
    try:
        declared = declared_requirements(folder)
    except DependencyError as exc:
        raise ValidationError({"source_ref": f"Its declared dependencies cannot be read: {exc}"}) from exc
    requirements = list(dict.fromkeys([*declared, *extra]))
    if not requirements:
        return {"declared": [], "requirements": [], "status": "none"}
    missing = missing_requirements(requirements)
    try:
        environment_python(requirements, cache_dir=venvs_cache_dir(), progress=progress)
    except DependencyError as exc:
        raise ValidationError({"source_ref": f"Its dependencies could not be installed: {exc}"}) from exc
    status = "installed" if missing else "satisfied"
    return {"declared": declared, "requirements": requirements, "installed": missing, "status": status}


def version_inspect(
    *,
    source_kind: str,
    source_ref: str,
    capacity: int = 64,
    git_ref: str = "",
    git_subdir: str = "",
    env: dict[str, str] | None = None,
    requirements: list[str] | None = None,
    mounts: tuple[str, ...] = (),
    progress: Callable[[str], None] = lambda m: None,
) -> Inspection:
    """Start the source once, read its schema and metadata, measure it, tear it down. `requirements` are
    packages the version's settings add to what the folder declares; `mounts`, the folders of its data assets."""
    if source_kind not in SourceKind.values:
        raise ValidationError({"source_kind": f"Unknown source kind {source_kind!r}."})
    if source_kind == SourceKind.BUILTIN and source_ref in {b.slug for b in builtin_environments()}:
        pinned = "sha256:" + content_hash(builtin_get(source_ref).folder)
        if pinned in _builtin_inspections and not env and not requirements:
            return _builtin_inspections[pinned]
    progress("fetching the source" if source_kind == SourceKind.GIT else "reading the source")
    folder, commit = _folder_of(source_kind, source_ref, git_ref, git_subdir)
    pinned_folder = folder  # what the version pins: the source as given, not what an importer made of it
    dependencies: dict[str, Any] = {}
    if folder is not None:
        framework = detected_framework(folder)
        if framework is not None:  # an ORS or Verifiers environment: OpenEnv's importer makes it a folder
            progress(f"converting a {framework[0]} environment with OpenEnv's importer")
            try:
                folder = openenv_folder(folder, cache_dir=sources_cache_dir())
            except ImportFailed as exc:
                raise ValidationError({"source_ref": str(exc)}) from exc
        if not (folder / "server" / "app.py").exists():
            raise ValidationError({"source_ref": f"{folder} is not an OpenEnv folder (no server/app.py), nor an "
                                  f"environment OpenEnv's importers convert (ORS, Verifiers)."})  # fmt: skip
        try:
            dependencies = _dependencies(folder, list(requirements or []), progress)
        except ValidationError as exc:
            if framework is None:
                raise
            packages = (
                ", ".join(r for r in declared_requirements(folder) if missing_requirements([r])) or "its packages"
            )
            reason = " ".join(exc.messages)
            raise ValidationError({"source_ref": f"This {framework[0]} environment runs with {packages}, which could "
                                                 f"not be installed on this machine: {reason}"}) from exc  # fmt: skip
        if framework is not None:
            dependencies["imported_from"] = framework[0]
    kind = default_provider_kind("folder" if folder is not None else source_kind)
    try:
        provider = provider_get(kind, progress=progress)
    except ProvisionError as exc:
        raise ValidationError({"source_ref": f"The environment cannot start here: {exc.cause}."}) from exc
    source = source_for(
        source_kind="folder" if folder is not None else source_kind,
        source_ref=str(folder) if folder is not None else source_ref,
        capacity=capacity,
        env=env,
        requirements=dependencies.get("requirements"),
        mounts=mounts,
    )
    progress(f"starting the server ({kind})")
    try:
        deployment = provider.provision(source, replicas=1, labels={"purpose": "inspect"})
    except ProvisionError as exc:
        if "ConcurrencyConfigurationError" not in exc.cause or capacity == 1:
            log = f" (whole log: {exc.log})" if exc.log else ""
            reason = (exc.cause + log) if exc.cause else str(exc)
            lacked = missing_data(f"{exc.cause}\n{exc}", give=GIVE_WITH_ADD)
            reason = f"{reason} — {lacked}" if lacked else reason
            raise ValidationError({"source_ref": f"The environment did not start: {reason}"}) from exc
        # A single-session environment (no SUPPORTS_CONCURRENT_SESSIONS) that reads MAX_CONCURRENT_ENVS refuses to
        # start with more than one: it is a capacity of 1, not a broken server.
        progress("the server takes one session at a time; starting it with a capacity of 1")
        return version_inspect(source_kind=source_kind, source_ref=source_ref, capacity=1, git_ref=git_ref,
                               git_subdir=git_subdir, env=env, requirements=requirements, mounts=mounts,
                               progress=progress)  # fmt: skip
    endpoint = deployment.endpoints[0]
    timeout = float(settings.TRAINYARD_ENV_STEP_TIMEOUT)
    try:
        progress("reading its schema and tools")
        discovered = discover(endpoint)
        if folder is not None and (folder / "openenv.yaml").exists():
            # OpenEnv's /metadata has no field for these: an environment declares randomness and its reward in its
            # manifest.
            manifest = read_manifest(folder)
            discovered.metadata["stochastic"] = declares_randomness(manifest)
            try:
                declared = declared_rule(manifest)
            except RewardRuleError as exc:
                raise ValidationError({"source_ref": f"openenv.yaml's reward: {exc}."}) from exc
            if declared is not None:
                discovered.metadata["reward"] = declared.as_dict()
        progress("measuring its capacity")
        measured = measure_capacity(endpoint, bound=min(capacity, settings.TRAINYARD_CAPACITY_PROBE_LIMIT),
                                    timeout=timeout)  # fmt: skip
        if measured.accepted == 0:  # its first session failed: for want of data (finqa, Wordle) it says which
            log = getattr(provider, "server_log", lambda d: "")(deployment)
            lacked = missing_data(measured.note, give=GIVE_WITH_ADD) or missing_data(log, give=GIVE_WITH_ADD)
            if lacked:
                raise ValidationError({"source_ref": f"The server refused its first session ({measured.note}): "
                                                     f"{lacked}"})  # fmt: skip
        progress("checking what reset(seed) does")
        seeding = measure_seeding(endpoint, tools=discovered.tools, timeout=timeout)
        pinned = _pin(source_kind, pinned_folder, commit, discovered, provider, source_ref)
    except DiscoveryError as exc:
        raise ValidationError({"source_ref": f"The server does not describe itself properly: {exc}"}) from exc
    finally:
        provider.teardown(deployment)
    inspection = Inspection(discovered=discovered, pinned=pinned, capacity=measured, seeding=seeding,
                            dependencies=dependencies, started_with=capacity)  # fmt: skip
    if source_kind == SourceKind.BUILTIN and not env and not requirements:
        _builtin_inspections[pinned] = inspection
    return inspection
