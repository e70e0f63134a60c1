"""The team-shared environment catalog: an Environment has immutable, pinned EnvironmentVersions."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import models

from envs.rewards import RewardRule
from webapp.accounts.models import Team


class Visibility(models.TextChoices):
    TEAM = "team", "This team only"
    SHARED = "shared", "Shared with all teams"


class SourceKind(models.TextChoices):
    BUILTIN = "builtin", "Built-in"
    FOLDER = "folder", "Local folder"
    IMAGE = "image", "Docker image"
    URL = "url", "Running server (URL)"
    GIT = "git", "Git repository"


class Transport(models.TextChoices):
    """How sessions reach the server: OpenEnv's /ws socket, or HTTP for a server that serves no /ws (RFC 003's MCP
    template: reset/step over HTTP, one tenant per session; envs.http_session)."""

    WS = "ws", "WebSocket (/ws)"
    HTTP = "http", "HTTP (reset/step, MCP on /mcp)"


class Seeding(models.TextChoices):
    """What `reset(seed=...)` does, measured when the version is added."""

    HONOURED = "honoured", "honours the seed"
    IGNORED = "ignored", "ignores the seed (random starts)"
    CONSTANT = "constant", "starts the same whatever the seed"
    UNKNOWN = "unknown", "not measured"


class CatalogSource(models.Model):
    """A git repository (or a snapshot JSON) whose OpenEnv catalog cards a team took environments from: read again
    to check for updates, compared with OpenEnv's `compare_catalogs`, exported as a snapshot (envs/catalog_cards.py).

    `snapshot` is the read the team's environments were last taken from; `fetch_url` is the repository Trainyard
    fetches (the cards may name it by another identity, `repository_uri`)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="catalog_sources")
    fetch_url = models.CharField(max_length=500, help_text="The git repository Trainyard fetches the folders from")
    ref = models.CharField(max_length=200, blank=True, help_text="The branch or tag read (blank: the default branch)")
    root = models.CharField(max_length=300, default="envs", help_text="The folder whose sub-folders are environments")
    repository_uri = models.CharField(max_length=500, help_text="The GitHub identity the cards name the repository by")
    stand_in_identity = models.BooleanField(default=False, help_text="The identity is a stand-in: not on GitHub")
    publisher = models.CharField(max_length=253, default="trainyard.local")
    from_snapshot = models.BooleanField(default=False, help_text="Read from a snapshot JSON rather than the repository")
    snapshot = models.JSONField(default=dict, help_text="OpenEnv's catalog snapshot, as last taken from")
    read_at = models.DateTimeField(null=True, blank=True)
    last_check = models.JSONField(default=dict, blank=True, help_text="The last check for updates: OpenEnv's "
                                  "comparison, and what it offered")  # fmt: skip
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.fetch_url} ({self.root})"

    @property
    def revision(self) -> str:
        return ((self.snapshot or {}).get("source") or {}).get("revision", "")


class Environment(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="environments")
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.TEAM)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    catalog_source = models.ForeignKey(CatalogSource, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="environments")  # fmt: skip
    catalog_path = models.CharField(max_length=300, blank=True, help_text="Its folder in the catalog's repository")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "slug"], name="environment_slug_per_team")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.slug

    def latest_version(self) -> EnvironmentVersion | None:
        return self.versions.order_by("-created_at").first()


# Fields that define what a version IS; once a run used the version they never change.
PINNED_FIELDS = ("source_kind", "source_ref", "pinned_ref", "tools", "action_schema", "observation_schema", "label",
                 "git_ref", "git_subdir", "settings")  # fmt: skip

# A version's settings (`EnvironmentVersion.settings`); every key is optional.
#   env:                {NAME: value} for the server's environment (OPENSPIEL_GAME=catch)
#   fixed:              {action field: JSON value} sent with every call and hidden from the model
#   observation_fields: [field, ...] the model reads (absent: every declared field and metadata)
#   reset_args:         [column, ...] dataset columns that reach reset() (absent: every column but the prompt)
#   requirements:       [PyPI requirement, ...] installed beside what the folder declares (open_spiel for pyspiel)
#   reward:             {kind: sum|final|environment, field, source} whose reward a run learns from (envs/rewards.py;
#                       absent: the sum of step rewards)
#   assets:             [{name, sha256, size, folder, as}, ...] data files its server reads (envs/data_assets.py)
#   offered_tools:      [tool, ...] the tools a model is offered (absent: every tool); the server keeps them all
SETTING_KEYS = ("env", "fixed", "observation_fields", "reset_args", "requirements", "reward", "assets", "offered_tools")


class EnvironmentVersion(models.Model):
    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="versions")
    label = models.CharField(max_length=50, help_text="A version name, e.g. 1.0.0")
    source_kind = models.CharField(max_length=10, choices=SourceKind.choices)
    source_ref = models.CharField(
        max_length=500, help_text="Built-in name, folder path, image reference, URL or git repository URL"
    )
    git_ref = models.CharField(max_length=200, blank=True, help_text="Branch, tag or commit asked for (git sources)")
    git_subdir = models.CharField(max_length=300, blank=True, help_text="The environment's folder in the repository")
    pinned_ref = models.CharField(max_length=200, help_text="Content hash, commit, image digest or server version")
    capacity = models.PositiveIntegerField(default=64, help_text="Sessions one replica accepts (declared)")
    success_threshold = models.FloatField(
        default=0.0, help_text="An evaluated episode succeeds when its reward is above this (success rate, pass@k)"
    )
    capacity_measured = models.PositiveIntegerField(
        null=True, blank=True, help_text="Sessions one replica accepted when it was added (None: not measured)"
    )
    capacity_note = models.CharField(max_length=300, blank=True)
    seeding = models.CharField(max_length=10, choices=Seeding.choices, default=Seeding.UNKNOWN)
    mcp = models.BooleanField(default=False, help_text="An MCP environment: its tools are what its server lists")
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.WS)
    settings = models.JSONField(default=dict, blank=True, help_text="env, fixed, observation_fields, reset_args")
    dependencies = models.JSONField(default=dict, blank=True, help_text="Declared requirements and their install")
    tools = models.JSONField(default=list)
    action_schema = models.JSONField(default=dict)
    observation_schema = models.JSONField(default=dict)
    state_schema = models.JSONField(default=dict)
    server_metadata = models.JSONField(default=dict)
    catalog_card = models.JSONField(default=dict, blank=True, help_text="OpenEnv's card it was added from, if any")
    # What the server sustained under concurrent sessions (envs.trust.load_profile): measured_at, provider, levels.
    load_profile = models.JSONField(default=dict, blank=True)
    contract_hash = models.CharField(
        max_length=64, blank=True, help_text="sha256 of the schemas (and MCP tools) pinned when it was added"
    )
    used_at = models.DateTimeField(null=True, blank=True, help_text="When a run first used it; then it is frozen")
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["environment", "label"], name="version_label_per_environment")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.environment.slug}@{self.label}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            stored = EnvironmentVersion.objects.filter(pk=self.pk).values(*PINNED_FIELDS, "used_at").first()
            if stored and stored["used_at"] is not None:
                changed = [f for f in PINNED_FIELDS if stored[f] != getattr(self, f)]
                if changed:
                    raise ValidationError(f"{self} is used by a run and cannot change ({', '.join(changed)}).")
        super().save(*args, **kwargs)

    @property
    def is_frozen(self) -> bool:
        return self.used_at is not None

    @property
    def effective_capacity(self) -> int:
        """Sessions a replica really takes: the declared number, or fewer where the server refused sooner."""
        if self.capacity_measured is None:
            return self.capacity
        return max(1, min(self.capacity, self.capacity_measured))

    @property
    def load_rows(self) -> list[dict]:
        """The load profile's levels, each with its throughput as a share of the best level's (for a bar)."""
        levels = (self.load_profile or {}).get("levels") or []
        top = max((row.get("steps_per_s") or 0 for row in levels), default=0) or 1
        return [{**row, "bar": round(100 * (row.get("steps_per_s") or 0) / top)} for row in levels]

    @property
    def server_env(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in (self.settings.get("env") or {}).items()}

    @property
    def offered_tools(self) -> list[dict]:
        """The tools a model is offered, in the server's order: a subset a user chose, or every tool. A server with
        dozens of long tools (OpenEnv's calendar: 37, 54,928 tokens of descriptions) outgrows a small model's
        context before its first call; offering the few a task needs makes it trainable."""
        chosen = self.settings.get("offered_tools")
        return [t for t in self.tools if t.get("name") in chosen] if chosen else list(self.tools)

    @property
    def fixed_fields(self) -> dict:
        return dict(self.settings.get("fixed") or {})

    @property
    def reward_rule(self) -> RewardRule:
        """Whose reward a run on this version learns from, and where that was decided (envs/rewards.py)."""
        return RewardRule.from_dict(self.settings.get("reward"))


class TrustReport(models.Model):
    """The trust probes' verdict on one version: each probe passed, failed with evidence, or not applicable."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        ERROR = "error", "Error"

    version = models.ForeignKey(EnvironmentVersion, on_delete=models.CASCADE, related_name="trust_reports")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    results = models.JSONField(default=list)
    # OpenEnv's own validator beside our probes: [{"mode": local|url, "verdict", "checks": [...], "report": {...}}]
    openenv_validation = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=100, blank=True, help_text="Its message's id once the broker took it")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"trust report of {self.version} ({self.verdict})"

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.results if r.get("status") == "failed"]

    @property
    def verdict(self) -> str:
        """passed, failed, or the report's state while it has no results."""
        if self.state != self.State.DONE:
            return self.state
        return "failed" if self.failed else "passed"
