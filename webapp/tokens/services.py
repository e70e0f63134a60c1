"""Creating, revoking and checking API tokens."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_get
from webapp.tokens.models import ApiToken, Scope

PREFIX = "ty_"
MAX_EXPIRES_DAYS = 3650
MAX_TOKENS_PER_USER = 100
LAST_USED_RESOLUTION = timedelta(minutes=1)  # a busy token writes its last-used time at most once a minute


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(
    *, user, team: Team, name: str, scope: str = Scope.READ, expires_days: int | None = 90
) -> tuple[ApiToken, str]:
    """A new token for `user` in `team`; returns it and its secret text, which is shown once and never stored.
    A viewer may hold read tokens only: a token never does more than its user may."""
    name = (name or "").strip()
    errors: dict[str, list[str]] = {}
    if not name or len(name) > 100 or "\x00" in name:
        errors["name"] = ["Give the token a name of 1 to 100 characters."]
    if scope not in Scope.values:
        errors["scope"] = [f"Scope must be one of {', '.join(Scope.values)}."]
    if expires_days is not None and not 1 <= expires_days <= MAX_EXPIRES_DAYS:
        errors["expires_days"] = [f"A token expires after 1 to {MAX_EXPIRES_DAYS} days (or never)."]
    membership = membership_get(user=user, team=team)
    if membership is None:
        errors["team"] = ["You are not a member of that team."]
    elif scope == Scope.WRITE and not membership.allows(Role.MEMBER):
        errors["scope"] = ["A viewer of the team may create read tokens only."]
    if ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() >= MAX_TOKENS_PER_USER:
        errors["name"] = [f"You hold {MAX_TOKENS_PER_USER} tokens already: revoke some first."]
    if errors:
        raise ValidationError(errors)
    secret = secrets.token_urlsafe(32)
    raw = f"{PREFIX}{secret}"
    token = ApiToken.objects.create(
        user=user, team=team, name=name, scope=scope, prefix=raw[:10], digest=token_digest(raw),
        expires_at=timezone.now() + timedelta(days=expires_days) if expires_days else None,
    )  # fmt: skip
    return token, raw


def token_revoke(*, token: ApiToken, user) -> ApiToken:
    """Revoke one of the user's own tokens (revoking twice changes nothing)."""
    if token.user_id != user.pk:
        raise ValidationError("That is not your token.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_authenticate(raw: str) -> ApiToken | None:
    """The active token whose text this is, with its user still in its team; None otherwise."""
    if not raw or not raw.startswith(PREFIX) or len(raw) > 200:
        return None
    now = timezone.now()
    token = (
        ApiToken.objects.select_related("user", "team")
        .filter(digest=token_digest(raw), revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if token is None or not token.user.is_active or membership_get(user=token.user, team=token.team) is None:
        return None
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def token_may(token: ApiToken, *, write: bool) -> bool:
    """A read token reads; a write token also writes, as far as its user's role in the team allows today."""
    if not write:
        return True
    membership = membership_get(user=token.user, team=token.team)
    return token.can_write and membership is not None and membership.allows(Role.MEMBER)
