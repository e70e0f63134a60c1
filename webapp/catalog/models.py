"""The team-shared environment catalog: an Environment has immutable, pinned EnvironmentVersions."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from webapp.accounts.models import Team


class Visibility(models.TextChoices):
    TEAM = "team", "This team only"
    SHARED = "shared", "Shared with all teams"


class SourceKind(models.TextChoices):
    BUILTIN = "builtin", "Built-in"
    FOLDER = "folder", "Local folder"
    IMAGE = "image", "Docker image"
    URL = "url", "Running server (URL)"


class Environment(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="environments")
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.TEAM)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "slug"], name="environment_slug_per_team")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.slug

    def latest_version(self) -> EnvironmentVersion | None:
        return self.versions.order_by("-created_at").first()


# Fields that define what a version IS; once a run used the version they never change.
PINNED_FIELDS = ("source_kind", "source_ref", "pinned_ref", "tools", "action_schema", "observation_schema", "label")


class EnvironmentVersion(models.Model):
    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="versions")
    label = models.CharField(max_length=50, help_text="A version name, e.g. 1.0.0")
    source_kind = models.CharField(max_length=10, choices=SourceKind.choices)
    source_ref = models.CharField(max_length=500, help_text="Built-in name, folder path, image reference or URL")
    pinned_ref = models.CharField(max_length=200, help_text="Content hash, image digest or server version")
    capacity = models.PositiveIntegerField(default=64, help_text="Sessions one replica accepts")
    tools = models.JSONField(default=list)
    action_schema = models.JSONField(default=dict)
    observation_schema = models.JSONField(default=dict)
    state_schema = models.JSONField(default=dict)
    server_metadata = models.JSONField(default=dict)
    used_at = models.DateTimeField(null=True, blank=True, help_text="When a run first used it; then it is frozen")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
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
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

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
