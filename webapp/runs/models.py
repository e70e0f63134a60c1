"""Runs and everything they record. The database is the source of truth; live messages are replayable deltas."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

from webapp.accounts.models import Team
from webapp.catalog.models import EnvironmentVersion


class Status(models.TextChoices):
    QUEUED = "queued", "Queued"
    PROVISIONING = "provisioning", "Provisioning"
    RUNNING = "running", "Running"
    CANCELLING = "cancelling", "Cancelling"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    # An external run whose script stopped reporting (killed, its machine lost) without saying how it ended.
    CRASHED = "crashed", "Crashed"


ACTIVE_STATUSES = (Status.QUEUED, Status.PROVISIONING, Status.RUNNING, Status.CANCELLING)
FINAL_STATUSES = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.CRASHED)


class Kind(models.TextChoices):
    WORKER = "worker", "Trained by a Trainyard worker"
    EXTERNAL = "external", "Launched elsewhere, reported through the API"


# The legal moves of the status machine; a resume puts a finished run back in the queue.
TRANSITIONS: dict[str, set[str]] = {
    Status.QUEUED: {Status.PROVISIONING, Status.CANCELLED, Status.FAILED},
    Status.PROVISIONING: {Status.RUNNING, Status.FAILED, Status.CANCELLING, Status.CANCELLED},
    Status.RUNNING: {Status.SUCCEEDED, Status.FAILED, Status.CANCELLING, Status.CANCELLED, Status.CRASHED},
    Status.CANCELLING: {Status.CANCELLED, Status.FAILED, Status.SUCCEEDED, Status.CRASHED},
    Status.SUCCEEDED: {Status.QUEUED},
    Status.FAILED: {Status.QUEUED},
    Status.CANCELLED: {Status.QUEUED},
    # A crashed external run whose script reports again (it was only cut off) runs on.
    Status.CRASHED: {Status.QUEUED, Status.RUNNING, Status.SUCCEEDED, Status.FAILED, Status.CANCELLED},
}
TIMESTAMP_FIELD = {
    Status.QUEUED: "queued_at",
    Status.PROVISIONING: "provisioning_at",
    Status.RUNNING: "running_at",
    Status.CANCELLING: "cancel_requested_at",
    Status.SUCCEEDED: "finished_at",
    Status.FAILED: "finished_at",
    Status.CANCELLED: "finished_at",
    Status.CRASHED: "finished_at",
}


class Run(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.WORKER, db_index=True)
    external = models.JSONField(
        default=dict, blank=True, help_text="An external run: the host, launch command and client it reported"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=100)
    env_version = models.ForeignKey(EnvironmentVersion, on_delete=models.PROTECT, related_name="runs")
    environments = models.JSONField(
        default=list, blank=True,
        help_text="Several environments in one run: [{version, key, weight, replicas}], env_version first; empty: one",
    )  # fmt: skip
    model_name = models.CharField(max_length=300, help_text="tiny-local, a Hugging Face Hub id, or a local path")
    prompt_count = models.PositiveIntegerField(default=0, help_text="Rows in its RunPrompts (0: the default)")
    config = models.JSONField(default=dict, help_text="GRPO settings")
    replicas = models.PositiveIntegerField(default=1)
    provider = models.CharField(max_length=20, default="process")
    tags = models.JSONField(default=list, blank=True)
    transcript_policy = models.CharField(
        max_length=10,
        choices=[("all", "Keep every transcript"), ("sample", "Summaries for all; transcripts of a sample, the "
                                                               "best, the worst and the errored")],
        default="all",
    )  # fmt: skip
    trust_override_reason = models.TextField(blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children",
        help_text="The run whose saved model this run started from (train from a checkpoint)",
    )  # fmt: skip
    parent_model = models.CharField(max_length=40, blank=True, help_text="final or checkpoint-N of the parent")
    parent_step = models.PositiveIntegerField(null=True, blank=True)

    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    failure_reason = models.TextField(blank=True)
    step = models.PositiveIntegerField(default=0)
    max_steps = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    provisioning_at = models.DateTimeField(null=True, blank=True)
    running_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    celery_task_id = models.CharField(max_length=100, blank=True)
    worker_host = models.CharField(max_length=200, blank=True)
    gpu = models.CharField(max_length=200, blank=True)
    trainer_pid = models.IntegerField(null=True, blank=True)
    trainer_outcome = models.CharField(
        max_length=20, blank=True, help_text="What the trainer itself recorded at its end: succeeded, stopped, failed"
    )
    deployment = models.JSONField(default=dict, blank=True)
    slurm_job = models.JSONField(
        default=dict, blank=True, help_text="On a Slurm cluster: the job id, its state and Slurm's reason, its nodes"
    )
    resume_from = models.CharField(max_length=500, blank=True, help_text="Checkpoint folder the next start resumes")
    last_seq = models.BigIntegerField(default=0)
    episodes_recorded = models.PositiveIntegerField(default=0)
    env_tool_calls = models.PositiveIntegerField(default=0, help_text="Tool calls the environment answered")
    env_tool_errors = models.PositiveIntegerField(default=0, help_text="Tool calls that failed (refused, MCP errors)")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["team", "-created_at"]), models.Index(fields=["status", "heartbeat_at"])]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("runs:run-detail", args=[self.pk])

    @property
    def progress(self) -> float:
        return min(1.0, self.step / self.max_steps) if self.max_steps else 0.0

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def is_external(self) -> bool:
        return self.kind == Kind.EXTERNAL

    @property
    def never_stepped(self) -> bool:
        """Episodes were played but not one tool call reached the environment: whatever its status says, this run
        trained on nothing the environment did."""
        return self.episodes_recorded > 0 and self.env_tool_calls == 0

    @property
    def env_calls_per_episode(self) -> float | None:
        return self.env_tool_calls / self.episodes_recorded if self.episodes_recorded else None

    @property
    def env_refused_share(self) -> float | None:
        """Of the calls that reached the environment, the share it refused (an error, or a penalty that changed
        nothing)."""
        sent = self.env_tool_calls + self.env_tool_errors
        return self.env_tool_errors / sent if sent else None


class MetricPoint(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metrics")
    name = models.CharField(max_length=100)
    step = models.PositiveIntegerField()
    value = models.FloatField()
    wall_time = models.FloatField(help_text="Unix seconds")

    class Meta:
        # The unique constraint's index (run, name, step) also serves every range query of a series.
        constraints = [models.UniqueConstraint(fields=["run", "name", "step"], name="one_point_per_step")]

    def __str__(self) -> str:
        return f"{self.name}@{self.step}={self.value:g}"


class MetricRollup(models.Model):
    """Min and max of a series over fixed step buckets, kept up to date at ingest: a million-point series is
    drawn from about a thousand rows, with every bucket's extremes exact."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rollups")
    name = models.CharField(max_length=100)
    width = models.PositiveIntegerField(help_text="Steps per bucket")
    bucket = models.BigIntegerField(help_text="step // width")
    min_step = models.BigIntegerField()
    min_value = models.FloatField()
    max_step = models.BigIntegerField()
    max_value = models.FloatField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "name", "width", "bucket"], name="one_rollup_per_bucket")]

    def __str__(self) -> str:
        return f"{self.name}[{self.bucket * self.width}:+{self.width}]"


class Episode(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="episodes")
    step = models.PositiveIntegerField(db_index=True)
    group = models.PositiveIntegerField(help_text="GRPO group: rollouts of the same prompt")
    rank = models.PositiveIntegerField(default=0, help_text="The trainer process (rank) that played it")
    environment = models.CharField(max_length=120, blank=True, help_text="Its environment's key in a mixed run")
    index_in_group = models.PositiveIntegerField()
    prompt = models.TextField()
    turns = models.JSONField(default=list)
    reset_kwargs = models.JSONField(default=dict)
    reward = models.FloatField()
    advantage = models.FloatField(null=True)
    has_transcript = models.BooleanField(default=True, help_text="False: only the summary was kept (run policy)")
    row_key = models.CharField(max_length=64, blank=True, db_index=True, help_text="Dataset row: prompt and seed")
    env_episode_id = models.CharField(max_length=100, blank=True)
    num_tool_calls = models.PositiveIntegerField(default=0)
    num_tool_errors = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["step", "group", "index_in_group"]
        indexes = [models.Index(fields=["run", "step"]), models.Index(fields=["run", "reward"])]

    def __str__(self) -> str:
        return f"episode {self.group}.{self.index_in_group} of step {self.step}"


class ExternalBatch(models.Model):
    """A batch an external run's client sent, by its idempotency key: a retried batch is recorded once."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="external_batches")
    key = models.CharField(max_length=100)
    metrics = models.PositiveIntegerField(default=0, help_text="Metric values it held")
    episodes = models.PositiveIntegerField(default=0)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="one_batch_per_key")]

    def __str__(self) -> str:
        return f"batch {self.key} of run {self.run_id}"


class RunPrompts(models.Model):
    """A run's dataset rows, kept apart from the run row so that lists and run pages never load them (a 16 MB
    prompts file must not slow every runs list of the team). Every column but `prompt` reaches reset()."""

    run = models.OneToOneField(Run, primary_key=True, on_delete=models.CASCADE, related_name="prompt_rows")
    rows = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"prompts of run {self.run_id}"


def collapsed_at_first() -> list[str]:
    from webapp.runs.panels import COLLAPSED_AT_FIRST

    return list(COLLAPSED_AT_FIRST)


class ChartLayout(models.Model):
    """One user's arrangement of the charts, on every run and compare page (like a W&B workspace): the panels
    pinned to the top, those hidden, and the order of the rest, each by metric name."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chart_layout")
    pinned = models.JSONField(default=list, blank=True)
    hidden = models.JSONField(default=list, blank=True)
    order = models.JSONField(default=list, blank=True, help_text="Metric names in the order the user put them")
    collapsed = models.JSONField(default=collapsed_at_first, blank=True, help_text="Sections shown folded")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"chart layout of {self.user}"

    def as_dict(self) -> dict[str, list[str]]:
        return {"pinned": self.pinned, "hidden": self.hidden, "order": self.order, "collapsed": self.collapsed}


class TokenTrace(models.Model):
    """One episode's completion token by token, as the trainer's own forward pass saw it (a sample of the episodes:
    the run's `token_trace_groups` per step). Per-token numbers are packed as float16 (webapp/runs/token_traces.py):
    a 500-token completion keeps in about 4 kB."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="token_traces")
    step = models.PositiveIntegerField()
    rank = models.PositiveIntegerField(default=0)
    group = models.PositiveIntegerField()
    index_in_group = models.PositiveIntegerField()
    tokens = models.JSONField(default=list, help_text="Each token's text")
    logprobs = models.BinaryField(help_text="float16 per token: the policy's log-probability of it")
    entropies = models.BinaryField(help_text="float16 per token: the policy's entropy there")
    advantages = models.BinaryField(help_text="float16 per token: the advantage its loss was weighted by")
    trained = models.BinaryField(help_text="one byte per token: 1 in the loss, 0 not (a tool's result)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "step", "rank", "group", "index_in_group"], name="one_trace_per_episode"
            )
        ]

    def __str__(self) -> str:
        return f"tokens of episode {self.group}.{self.index_in_group} of step {self.step}"
