"""Actions on the catalog. A version is saved only after its server really started and described itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from envs.builtin import builtin_environments
from envs.contract import contract_hash, contract_of
from envs.data_assets import GIVE_LATER, Asset, missing_data
from envs.mcp_tools import mcp_result
from envs.providers import ProvisionError
from envs.providers.base import content_hash
from envs.rewards import RewardRule, detected_rule
from envs.session import EnvError, EnvSession, SessionBroken
from envs.tools import ToolSpec
from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_require
from webapp.catalog.deployments import default_provider_kind, provider_get, version_source
from webapp.catalog.inspection import Inspection, version_inspect
from webapp.catalog.models import Environment, EnvironmentVersion, SourceKind, Visibility
from webapp.catalog.version_assets import AssetMissing, assets_on_this_host
from webapp.catalog.version_settings import settings_clean


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
    git_ref: str = "",
    git_subdir: str = "",
    settings: dict[str, Any] | None = None,
    progress: Callable[[str], None] = lambda m: None,
) -> Environment:
    """Create an environment with its first version. Nothing is saved unless the version was inspected."""
    if user is not None:
        membership_require(user=user, team=team, role=Role.MEMBER)
    slug = slug or slugify(name)
    if not slug:
        raise ValidationError({"name": "Give the environment a name with letters or digits."})
    if Environment.objects.filter(team=team, slug=slug).exists():
        raise ValidationError({"name": f"{team.name} already has an environment called {slug!r}."})
    source = SourceSpec(source_kind, source_ref, capacity, git_ref, git_subdir)
    inspection, cleaned = _inspect_with_settings(source, settings, progress)
    try:
        with transaction.atomic():
            environment = Environment.objects.create(
                team=team,
                name=name,
                slug=slug,
                description=description or inspection.discovered.metadata.get("description", ""),
                tags=list(tags or []),
                visibility=visibility,
                created_by=user,
            )
            _version_save(environment, user, label, source, inspection, cleaned)
    except IntegrityError:
        raise ValidationError({"name": f"{team.name} already has an environment called {slug!r}."}) from None
    return environment


def version_add(
    *,
    environment: Environment,
    user,
    source_kind: str,
    source_ref: str,
    label: str,
    capacity: int = 64,
    git_ref: str = "",
    git_subdir: str = "",
    settings: dict[str, Any] | None = None,
    progress: Callable[[str], None] = lambda m: None,
) -> EnvironmentVersion:
    if user is not None:
        membership_require(user=user, team=environment.team, role=Role.MEMBER)
    if environment.versions.filter(label=label).exists():
        raise ValidationError({"label": f"Version {label!r} already exists; versions never change once added."})
    source = SourceSpec(source_kind, source_ref, capacity, git_ref, git_subdir)
    inspection, cleaned = _inspect_with_settings(source, settings, progress)
    same = environment.versions.filter(pinned_ref=inspection.pinned, settings=cleaned).first()
    if source_kind == SourceKind.GIT and same is not None:
        raise ValidationError(
            {
                "git_ref": f"Version {same.label} already pins commit "
                f"{inspection.pinned.removeprefix('git:')[:12]}; a new commit makes a new version."
            }
        )
    return _version_save(environment, user, label, source, inspection, cleaned)


@dataclass(frozen=True)
class SourceSpec:
    kind: str
    ref: str
    capacity: int
    git_ref: str = ""
    git_subdir: str = ""


def _inspect_with_settings(
    source: SourceSpec, settings: dict[str, Any] | None, progress: Callable[[str], None]
) -> tuple[Inspection, dict[str, Any]]:
    if source.kind == SourceKind.GIT and not source.ref.strip():
        raise ValidationError({"source_ref": "Give the repository's URL."})
    env = (settings or {}).get("env") or {}
    requirements = (settings or {}).get("requirements") or []
    # The server starts with these: check them before anything starts.
    assets = (settings or {}).get("assets") or []
    early = settings_clean({"env": env, "requirements": requirements, "assets": assets}, tools=[],
                           observation_schema={})  # fmt: skip
    try:  # data given with the add (finqa's dataset, Wordle's corpus) is there from the first session
        variables, mounts = assets_on_this_host([Asset.from_dict(a) for a in early.get("assets") or []])
    except AssetMissing as exc:
        raise ValidationError({"assets": str(exc)}) from exc
    inspection = version_inspect(source_kind=source.kind, source_ref=source.ref, capacity=source.capacity,
                                 git_ref=source.git_ref, git_subdir=source.git_subdir, env={**env, **variables},
                                 requirements=early.get("requirements"), mounts=mounts,
                                 progress=progress)  # fmt: skip
    cleaned = settings_clean(settings, tools=[t.as_dict() for t in inspection.discovered.tools],
                             observation_schema=inspection.discovered.observation_schema)  # fmt: skip
    if inspection.capacity is not None and inspection.capacity.accepted == 0:
        raise ValidationError({"source_ref": f"The server refused its first session: {inspection.capacity.note}"})
    if "reward" not in cleaned:  # no user's choice: what the manifest declares, else what the server shows
        discovered = inspection.discovered
        declared = discovered.metadata.get("reward")
        rule = RewardRule.from_dict(declared) if declared else detected_rule(discovered.observation_schema)
        if rule is not None:
            cleaned["reward"] = rule.as_dict()
    return inspection, cleaned


def _version_save(environment, user, label, source: SourceSpec, inspection: Inspection, cleaned: dict[str, Any]):
    discovered = inspection.discovered
    measured = inspection.capacity
    contract = contract_of(action=discovered.action_schema, observation=discovered.observation_schema,
                           state=discovered.state_schema,
                           mcp_tools=[t.as_dict() for t in discovered.tools] if discovered.mcp else None,
                           transport=discovered.transport)  # fmt: skip
    if source.kind == SourceKind.FOLDER:  # for the workers on other hosts, where this path means nothing
        from webapp.catalog.folder_snapshots import snapshot_publish

        snapshot_publish(Path(source.ref).expanduser().resolve(), inspection.pinned)
    version = EnvironmentVersion.objects.create(
        environment=environment,
        label=label,
        source_kind=source.kind,
        source_ref=source.ref,
        git_ref=source.git_ref if source.kind == SourceKind.GIT else "",
        git_subdir=source.git_subdir.strip("/") if source.kind == SourceKind.GIT else "",
        pinned_ref=inspection.pinned,
        capacity=inspection.started_with or source.capacity,
        capacity_measured=measured.accepted if measured else None,
        capacity_note=(measured.note if measured else "")[:300],
        seeding=inspection.seeding,
        mcp=discovered.mcp,
        transport=discovered.transport,
        settings=cleaned,
        dependencies=inspection.dependencies,
        tools=[t.as_dict() for t in discovered.tools],
        action_schema=discovered.action_schema,
        observation_schema=discovered.observation_schema,
        state_schema=discovered.state_schema,
        server_metadata=discovered.metadata,
        contract_hash=contract_hash(contract),
        created_by=user,
    )
    if settings.TRAINYARD_TRUST_ON_ADD:
        from webapp.catalog.trust import trust_check_request

        trust_check_request(version=version)
    return version


def version_settings_update(*, version: EnvironmentVersion, user, settings: dict[str, Any]) -> EnvironmentVersion:
    """Change a version's settings while no run has used it; afterwards they are part of what it is."""
    if user is not None:
        membership_require(user=user, team=version.environment.team, role=Role.MEMBER)
    if version.is_frozen:
        raise ValidationError({"settings": f"{version} is used by a run: its settings are frozen. Add a new version "
                               f"with the settings you want."})  # fmt: skip
    kept = version.settings.get("reward") or {}
    if not (settings or {}).get("reward") and kept.get("source") in ("declared", "detected"):
        settings = {**settings, "reward": kept}  # what the environment said stays unless a user chooses otherwise
    if "assets" not in (settings or {}) and version.settings.get("assets"):
        settings = {**settings, "assets": version.settings["assets"]}  # data is added and kept apart from the form
    version.settings = settings_clean(settings, tools=version.tools, observation_schema=version.observation_schema)
    version.save(update_fields=["settings"])
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


def version_tool(version: EnvironmentVersion, name: str) -> ToolSpec:
    """One of the version's tools as the model meets it: its fixed fields sent automatically and hidden."""
    for tool in version.tools:
        if tool["name"] == name:
            return ToolSpec.from_dict(tool).with_fixed(version.fixed_fields)
    raise ValidationError({"tool": f"{version} has no tool {name!r}."})


def version_testdrive(
    *,
    version: EnvironmentVersion,
    action: dict[str, Any] | None = None,
    tool: str | None = None,
    arguments: dict[str, Any] | None = None,
    provider_kind: str | None = None,
    seed: int | None = 0,
    progress: Callable[[str], None] = lambda m: None,
) -> TestDrive:
    """Provision the version, reset, call one tool (or send one raw `action`), tear down. Errors come back in the
    result, never half-done; a tool error (an MCP tool that failed or does not exist) is an error too."""
    spec = version_tool(version, tool) if tool else None
    if spec is not None:
        action = spec.action(arguments or {})
    if action is None:
        raise ValidationError({"tool": "Name a tool to call (or give a raw action)."})
    kind = provider_kind or default_provider_kind(version.source_kind)
    progress(f"provisioning {version} with the {kind} provider")
    try:
        provider = provider_get(kind, progress=progress)
        source = version_source(version, progress=progress)
        deployment = provider.provision(source, replicas=1, labels={"purpose": "testdrive"})
    except ProvisionError as exc:
        raise ValidationError(f"The environment did not start: {exc.cause or exc}") from exc
    endpoint = deployment.endpoints[0]
    drive = TestDrive(provider=kind, endpoint=endpoint, tools=version.tools, reset={}, action=action)
    timeout = float(settings.TRAINYARD_ENV_STEP_TIMEOUT)
    try:
        with EnvSession(endpoint, timeout=timeout) as session:
            progress("reset")
            first = session.reset(seed=seed)
            drive.reset = {"observation": first.observation, "reward": first.reward, "done": first.done}
            progress("step")
            try:
                result = session.step(action)
                drive.step = {"observation": result.observation, "reward": result.reward, "done": result.done}
                is_mcp_call = spec.mcp if spec is not None else action.get("type") == "call_tool"
                if is_mcp_call:
                    text, error = mcp_result(result.observation)
                    drive.step["result"] = text
                    if error:
                        drive.error = f"the tool failed: {error}"
            except EnvError as exc:
                drive.error = f"the server refused the action: {exc}"
    except (SessionBroken, EnvError) as exc:
        drive.error = str(exc)
    finally:
        if drive.error:  # a server that lacked a data file says which in its error or its log: name it
            log = getattr(provider, "server_log", lambda d: "")(deployment)
            give = GIVE_LATER.replace("SLUG", version.environment.slug)
            hint = missing_data(drive.error, give=give) or missing_data(log, give=give)
            if hint:
                drive.error = f"{drive.error} — {hint}"
        progress("tearing down")
        provider.teardown(deployment)
    return drive
