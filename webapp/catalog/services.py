"""Actions on the catalog. A version is saved only after its server really started and described itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from envs.builtin import builtin_environments, builtin_get, read_manifest
from envs.providers import ProvisionError
from envs.providers.base import content_hash
from envs.session import EnvError, EnvSession, SessionBroken
from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_require
from webapp.catalog.deployments import default_provider_kind, provider_get, source_for
from webapp.catalog.discovery import Discovered, DiscoveryError, discover
from webapp.catalog.models import Environment, EnvironmentVersion, SourceKind, Visibility


def _pin(source_kind: str, source_ref: str, discovered: Discovered, provider) -> str:
    if source_kind == SourceKind.BUILTIN:
        return "sha256:" + content_hash(builtin_get(source_ref).folder)
    if source_kind == SourceKind.FOLDER:
        return "sha256:" + content_hash(source_for(source_kind=source_kind, source_ref=source_ref).folder)
    if source_kind == SourceKind.IMAGE:
        image = provider.client.images.get(source_ref)
        return (image.attrs.get("RepoDigests") or [image.id])[0]
    return "server:" + str(discovered.metadata.get("version") or "unknown")


# Built-in folders are identified by their content hash: what one inspection found holds for the process's life.
_builtin_inspections: dict[str, Discovered] = {}


def version_inspect(*, source_kind: str, source_ref: str, capacity: int = 64) -> tuple[Discovered, str]:
    """Start the source once, read its schema and metadata, tear it down. Errors name the form field."""
    if source_kind == SourceKind.BUILTIN and source_ref in {b.slug for b in builtin_environments()}:
        pinned = "sha256:" + content_hash(builtin_get(source_ref).folder)
        if pinned in _builtin_inspections:
            return _builtin_inspections[pinned], pinned
    if source_kind not in SourceKind.values:
        raise ValidationError({"source_kind": f"Unknown source kind {source_kind!r}."})
    if source_kind == SourceKind.BUILTIN:
        try:
            builtin_get(source_ref)
        except KeyError:
            raise ValidationError({"source_ref": f"There is no built-in environment {source_ref!r}."}) from None
    try:
        source = source_for(source_kind=source_kind, source_ref=source_ref, capacity=capacity)
    except (OSError, ValueError) as exc:
        raise ValidationError({"source_ref": str(exc)}) from exc
    if source.kind == "folder" and not (source.folder / "server" / "app.py").exists():
        raise ValidationError({"source_ref": f"{source.folder} is not an OpenEnv folder (no server/app.py)."})
    provider = provider_get(default_provider_kind(source_kind))
    try:
        deployment = provider.provision(source, replicas=1, labels={"purpose": "inspect"})
    except ProvisionError as exc:
        raise ValidationError({"source_ref": f"The environment did not start: {exc}"}) from exc
    try:
        discovered = discover(deployment.endpoints[0])
        if source.kind == "folder" and (source.folder / "openenv.yaml").exists():
            # OpenEnv's /metadata has no field for it: an environment declares randomness in its manifest.
            manifest = read_manifest(source.folder)
            discovered.metadata["stochastic"] = bool(manifest.get("stochastic", False))
        pinned = _pin(source_kind, source_ref, discovered, provider)
    except DiscoveryError as exc:
        raise ValidationError({"source_ref": f"The server does not describe itself properly: {exc}"}) from exc
    finally:
        provider.teardown(deployment)
    if source_kind == SourceKind.BUILTIN:
        _builtin_inspections[pinned] = discovered
    return discovered, pinned


def environment_create(
    *,
    team: Team,
    user,
    name: str,
    source_kind: str,
    source_ref: str,
    label: str = "1.0.0",
    slug: str = "",
    description: str = "",
    tags: list[str] | None = None,
    visibility: str = Visibility.TEAM,
    capacity: int = 64,
) -> Environment:
    """Create an environment with its first version. Nothing is saved unless the version was inspected."""
    if user is not None:
        membership_require(user=user, team=team, role=Role.MEMBER)
    slug = slug or slugify(name)
    if not slug:
        raise ValidationError({"name": "Give the environment a name with letters or digits."})
    if Environment.objects.filter(team=team, slug=slug).exists():
        raise ValidationError({"name": f"{team.name} already has an environment called {slug!r}."})
    discovered, pinned = version_inspect(source_kind=source_kind, source_ref=source_ref, capacity=capacity)
    try:
        with transaction.atomic():
            environment = Environment.objects.create(
                team=team,
                name=name,
                slug=slug,
                description=description or discovered.metadata.get("description", ""),
                tags=list(tags or []),
                visibility=visibility,
                created_by=user,
            )
            _version_save(environment, user, label, source_kind, source_ref, pinned, capacity, discovered)
    except IntegrityError:
        raise ValidationError({"name": f"{team.name} already has an environment called {slug!r}."}) from None
    return environment


def version_add(
    *, environment: Environment, user, source_kind: str, source_ref: str, label: str, capacity: int = 64
) -> EnvironmentVersion:
    if user is not None:
        membership_require(user=user, team=environment.team, role=Role.MEMBER)
    if environment.versions.filter(label=label).exists():
        raise ValidationError({"label": f"Version {label!r} already exists; versions never change once added."})
    discovered, pinned = version_inspect(source_kind=source_kind, source_ref=source_ref, capacity=capacity)
    return _version_save(environment, user, label, source_kind, source_ref, pinned, capacity, discovered)


def _version_save(environment, user, label, source_kind, source_ref, pinned, capacity, discovered):
    version = EnvironmentVersion.objects.create(
        environment=environment,
        label=label,
        source_kind=source_kind,
        source_ref=source_ref,
        pinned_ref=pinned,
        capacity=capacity,
        tools=[t.as_dict() for t in discovered.tools],
        action_schema=discovered.action_schema,
        observation_schema=discovered.observation_schema,
        state_schema=discovered.state_schema,
        server_metadata=discovered.metadata,
        created_by=user,
    )
    if settings.TRAINYARD_TRUST_ON_ADD:
        from webapp.catalog.trust import trust_check_request

        trust_check_request(version=version)
    return version


def version_mark_used(*, version: EnvironmentVersion) -> None:
    """Freeze a version: called when a run first uses it."""
    if version.used_at is None:
        EnvironmentVersion.objects.filter(pk=version.pk, used_at__isnull=True).update(used_at=timezone.now())
        version.refresh_from_db(fields=["used_at"])


def builtins_register(
    *, team: Team, user, progress: Callable[[str], None] = lambda m: None
) -> list[EnvironmentVersion]:
    """Register (or refresh) the built-in environments as shared catalog entries owned by `team`. Idempotent:
    a built-in whose folder content is unchanged is skipped without starting its server."""
    registered = []
    for builtin in builtin_environments():
        pinned = "sha256:" + content_hash(builtin.folder)
        existing = EnvironmentVersion.objects.filter(
            environment__team=team, environment__slug=builtin.slug, pinned_ref=pinned
        ).first()
        if existing:
            registered.append(existing)
            continue
        progress(f"registering built-in environment {builtin.slug}")
        environment = Environment.objects.filter(team=team, slug=builtin.slug).first()
        if environment is None:
            environment = environment_create(
                team=team,
                user=None,
                name=builtin.slug,
                slug=builtin.slug,
                source_kind=SourceKind.BUILTIN,
                source_ref=builtin.slug,
                label=builtin.version,
                description=builtin.description,
                tags=list(builtin.tags),
                visibility=Visibility.SHARED,
            )
            registered.append(environment.latest_version())
            continue
        label = builtin.version
        if environment.versions.filter(label=label).exists():
            label = f"{builtin.version}+{pinned.removeprefix('sha256:')[:8]}"
        registered.append(
            version_add(
                environment=environment, user=None, source_kind=SourceKind.BUILTIN, source_ref=builtin.slug, label=label
            )
        )
    return registered


@dataclass
class TestDrive:
    provider: str
    endpoint: str
    tools: list[dict[str, Any]]
    reset: dict[str, Any]
    action: dict[str, Any]
    step: dict[str, Any] | None = None
    error: str | None = None
    events: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "endpoint": self.endpoint,
            "tools": self.tools,
            "reset": self.reset,
            "action": self.action,
            "step": self.step,
            "error": self.error,
        }


def version_testdrive(
    *,
    version: EnvironmentVersion,
    action: dict[str, Any],
    provider_kind: str | None = None,
    seed: int | None = 0,
    progress: Callable[[str], None] = lambda m: None,
) -> TestDrive:
    """Provision the version, reset, take one step, tear down. Errors come back in the result, never half-done."""
    kind = provider_kind or default_provider_kind(version.source_kind)
    provider = provider_get(kind, progress=progress)
    source = source_for(source_kind=version.source_kind, source_ref=version.source_ref, capacity=version.capacity)
    progress(f"provisioning {version} with the {kind} provider")
    try:
        deployment = provider.provision(source, replicas=1, labels={"purpose": "testdrive"})
    except ProvisionError as exc:
        raise ValidationError(f"The environment did not start: {exc}") from exc
    endpoint = deployment.endpoints[0]
    drive = TestDrive(provider=kind, endpoint=endpoint, tools=version.tools, reset={}, action=action)
    try:
        with EnvSession(endpoint, timeout=30) as session:
            progress("reset")
            first = session.reset(seed=seed)
            drive.reset = {"observation": first.observation, "reward": first.reward, "done": first.done}
            progress("step")
            try:
                result = session.step(action)
                drive.step = {"observation": result.observation, "reward": result.reward, "done": result.done}
            except EnvError as exc:
                drive.error = f"the server refused the action: {exc}"
    except (SessionBroken, EnvError) as exc:
        drive.error = str(exc)
    finally:
        progress("tearing down")
        provider.teardown(deployment)
    return drive
