"""An evaluation: one model measured on held-out episodes of one or more environment versions, every episode kept.

An evaluation is either a job of its own (a worker provisions the versions and plays the episodes with the same
adapter and concurrent tool dispatch as training) or one point of a run's evals during training (`run`, `step`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

from webapp.accounts.models import Team
from webapp.catalog.models import EnvironmentVersion
from webapp.evals.episode_budget import DEFAULT_MAX_TOKENS


class EvalStatus(models.TextChoices):
    QUEUED = "queued"
    PROVISIONING = "provisioning"
    RUNNING = "running"
    CANCELLING = "cancelling"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE = (EvalStatus.QUEUED, EvalStatus.PROVISIONING, EvalStatus.RUNNING, EvalStatus.CANCELLING)
FINISHED = (EvalStatus.SUCCEEDED, EvalStatus.FAILED, EvalStatus.CANCELLED)

# The legal moves of an evaluation (a run's evals during training start as running). The one writer is
# webapp.evals.services.evaluation_transition.
EVAL_TRANSITIONS: dict[str, set[str]] = {
    EvalStatus.QUEUED: {EvalStatus.PROVISIONING, EvalStatus.CANCELLED, EvalStatus.FAILED},
    EvalStatus.PROVISIONING: {EvalStatus.RUNNING, EvalStatus.FAILED, EvalStatus.CANCELLING, EvalStatus.CANCELLED},
    EvalStatus.RUNNING: {EvalStatus.SUCCEEDED, EvalStatus.FAILED, EvalStatus.CANCELLING, EvalStatus.CANCELLED},
    EvalStatus.CANCELLING: {EvalStatus.CANCELLED, EvalStatus.FAILED, EvalStatus.SUCCEEDED},
    EvalStatus.SUCCEEDED: set(),
    EvalStatus.FAILED: set(),
    EvalStatus.CANCELLED: set(),
}
EVAL_TIMESTAMP_FIELD = {
    EvalStatus.PROVISIONING: "started_at",
    EvalStatus.CANCELLING: "cancel_requested_at",
    EvalStatus.SUCCEEDED: "finished_at",
    EvalStatus.FAILED: "finished_at",
    EvalStatus.CANCELLED: "finished_at",
}


class Evaluation(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="evaluations")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=100)
    model_name = models.CharField(max_length=300, help_text="tiny-local, a warm start, a Hub id, a path, run:ID/…")
    env_version = models.ForeignKey(EnvironmentVersion, on_delete=models.PROTECT, related_name="evaluations",
                                    help_text="The first (or only) version evaluated")  # fmt: skip
    versions = models.JSONField(default=list, help_text="[{version, key, threshold}] of every version evaluated")
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="evaluations",
                            help_text="Set for a run's evals during training")  # fmt: skip
    step = models.PositiveIntegerField(null=True, blank=True, help_text="The run's step it evaluated")
    # what was measured, and how (the leaderboard ranks only evaluations with the same `settings_key`)
    seeds = models.JSONField(default=list)
    prompts = models.JSONField(default=list, help_text="Prompt texts; the default prompt when empty")
    k = models.PositiveIntegerField(default=1, help_text="Samples per episode (avg@k, pass@k)")
    greedy = models.BooleanField(default=True)
    temperature = models.FloatField(default=1.0)
    top_p = models.FloatField(default=1.0)
    max_turns = models.PositiveIntegerField(default=6)
    max_tokens = models.PositiveIntegerField(default=DEFAULT_MAX_TOKENS)
    settings_key = models.CharField(max_length=64, db_index=True)
    provider = models.CharField(max_length=20, default="process")
    # how it went
    status = models.CharField(max_length=20, choices=EvalStatus.choices, default=EvalStatus.QUEUED, db_index=True)
    failure_reason = models.TextField(blank=True)
    episodes_total = models.PositiveIntegerField(default=0, help_text="Episodes x k x versions")
    episodes_done = models.PositiveIntegerField(default=0)
    results = models.JSONField(default=dict, blank=True, help_text="Aggregates per version key (evals.results)")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    worker_host = models.CharField(max_length=200, blank=True)
    evaluator_pid = models.IntegerField(null=True, blank=True)
    deployment = models.JSONField(default=dict, blank=True)
    task_id = models.CharField(max_length=100, blank=True, help_text="Its message's id once the broker took it")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["team", "-created_at"]), models.Index(fields=["run", "step"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("evals:eval-detail", args=[self.pk])

    @property
    def progress(self) -> float:
        return min(1.0, self.episodes_done / self.episodes_total) if self.episodes_total else 0.0

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE

    @property
    def first_result(self) -> dict:
        """The aggregates of its first (often only) environment, for lists."""
        return next(iter(self.results.values()), {})


class EvalEpisode(models.Model):
    """One sample of one episode (seed or prompt) of one version, in full."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="episodes")
    environment = models.CharField(max_length=120, help_text="The version's key in the evaluation")
    version_id = models.PositiveIntegerField()
    seed = models.BigIntegerField(null=True, blank=True)
    row_key = models.CharField(max_length=64, db_index=True, help_text="Prompt and reset columns: the same episode")
    sample = models.PositiveIntegerField(default=0, help_text="Which of the k samples")
    prompt = models.TextField()
    reset_kwargs = models.JSONField(default=dict)
    turns = models.JSONField(default=list)
    reward = models.FloatField()
    success = models.BooleanField()
    num_turns = models.PositiveIntegerField(default=0, help_text="Assistant turns")
    num_tokens = models.PositiveIntegerField(default=0, help_text="Completion tokens, tool results included")
    num_tool_calls = models.PositiveIntegerField(default=0)
    num_tool_errors = models.PositiveIntegerField(default=0)
    env_episode_id = models.CharField(max_length=100, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["environment", "seed", "row_key", "sample"]
        indexes = [models.Index(fields=["evaluation", "environment", "row_key"])]

    def __str__(self) -> str:
        return f"eval {self.evaluation_id} {self.environment} seed {self.seed} #{self.sample}: {self.reward}"
