"""Alerts: a team's rules (beside the built-in GRPO rules), where alerts go (webhooks, e-mail), the alerts a run
raised, each delivery with its outcome, and the rules muted on a run."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.accounts.models import Team


class AlertRule(models.Model):
    """A team's own rule, on every run of the team or on one run."""

    class Kind(models.TextChoices):
        THRESHOLD = "threshold", "crosses a threshold"
        CHANGE = "change", "changes by more than X % over N steps"
        ZSCORE = "zscore", "leaves its recent band (z-score)"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alert_rules")
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="alert_rules",
                            help_text="Only this run (empty: every run of the team)")  # fmt: skip
    name = models.CharField(max_length=100)
    metric = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    above = models.BooleanField(default=True, help_text="threshold: fire above it (else below)")
    value = models.FloatField(help_text="threshold: the value; change: the percentage; z-score: the z")
    steps = models.PositiveIntegerField(default=1, help_text="threshold: for N steps; change: over N; z: window")
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        return f"rule-{self.pk}"


class AlertChannel(models.Model):
    """Where a team's alerts are delivered: a webhook (Slack-compatible JSON) or an e-mail address."""

    class Kind(models.TextChoices):
        WEBHOOK = "webhook", "Webhook (Slack-compatible JSON)"
        EMAIL = "email", "E-mail"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alert_channels")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    target = models.CharField(max_length=500, help_text="The webhook's URL or the e-mail address")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.target}"


class Alert(models.Model):
    """A rule that fired on a run: once per run and rule."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="alerts")
    rule_key = models.CharField(max_length=40, help_text="A built-in rule's key, or rule-<id>")
    title = models.CharField(max_length=120)
    message = models.TextField()
    metric = models.CharField(max_length=100, blank=True)
    step = models.PositiveIntegerField(null=True, blank=True)
    value = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["run", "rule_key"], name="one_alert_per_run_and_rule")]

    def __str__(self) -> str:
        return f"{self.title} on run {self.run_id}"


class AlertDelivery(models.Model):
    """One alert sent to one channel: pending until it is sent, retried with backoff when a try fails."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed (gave up)"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(AlertChannel, null=True, on_delete=models.SET_NULL, related_name="deliveries")
    kind = models.CharField(max_length=10)
    target = models.CharField(max_length=500)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    response_code = models.IntegerField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} to {self.target}: {self.status}"


class AlertMute(models.Model):
    """A rule silenced on one run (it neither shows nor is delivered there)."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="alert_mutes")
    rule_key = models.CharField(max_length=40)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "rule_key"], name="one_mute_per_run_and_rule")]

    def __str__(self) -> str:
        return f"{self.rule_key} muted on run {self.run_id}"
