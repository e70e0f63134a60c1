"""Jobs: work a page asks for that takes longer than a request should (a pre-flight that starts the environment and
loads a tokenizer, a test drive). A worker runs it on the `default` queue; the page shows its phase live."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

from webapp.accounts.models import Team


class Job(models.Model):
    class Kind(models.TextChoices):
        RUN_CREATE = "run_create", "Pre-flight and queue a run"
        TESTDRIVE = "testdrive", "Test drive"
        ENV_ADD = "env_add", "Add an environment"
        VERSION_ADD = "version_add", "Add a version"
        CATALOG_IMPORT = "catalog_import", "Add environments from a catalog"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=300, blank=True)
    progress = models.FloatField(default=0.0)
    params = models.JSONField(default=dict)
    result = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=dict, blank=True, help_text="field -> messages, as a form shows them")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=100, blank=True, help_text="Its message's id once the broker took it")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("jobs:job-detail", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)
