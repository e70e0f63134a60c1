"""API tokens: what a script, a notebook or a CI job of a user's acts with (`Authorization: Bearer <token>`).

A token acts for its user within one team only, with a scope (read, or read and write), until it expires or is
revoked. Only its SHA-256 digest is stored (tokens are 256 random bits: a slow hash adds nothing), and a short
prefix that the settings page shows so a user can tell their tokens apart."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from webapp.accounts.models import Team


class Scope(models.TextChoices):
    READ = "read", "Read"
    WRITE = "write", "Read and write"


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ)
    prefix = models.CharField(max_length=16, db_index=True, help_text="The token's first characters, for display")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the whole token")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.scope}, {self.team})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())

    @property
    def can_write(self) -> bool:
        return self.scope == Scope.WRITE
