"""Actions that change teams and memberships."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from webapp.accounts.models import Membership, Role, Team


def team_create(*, name: str, owner=None) -> Team:
    base = slugify(name) or "team"
    slug, n = base, 1
    while Team.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    with transaction.atomic():
        team = Team.objects.create(name=name, slug=slug)
        if owner is not None:
            Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    return team


def membership_add(*, team: Team, username: str, role: str = Role.MEMBER) -> Membership:
    if role not in Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}."})
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError({"username": f"No user called {username!r}."})
    membership, created = Membership.objects.get_or_create(team=team, user=user, defaults={"role": role})
    if not created:
        raise ValidationError({"username": f"{username} is already in {team.name}."})
    return membership


def _guard_last_owner(membership: Membership) -> None:
    others = Membership.objects.filter(team=membership.team, role=Role.OWNER).exclude(pk=membership.pk)
    if membership.role == Role.OWNER and not others.exists():
        raise ValidationError("A team needs at least one owner.")


def membership_set_role(*, membership: Membership, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}."})
    with transaction.atomic():
        if role != Role.OWNER:
            _guard_last_owner(membership)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def membership_remove(*, membership: Membership) -> None:
    with transaction.atomic():
        _guard_last_owner(membership)
        membership.delete()
