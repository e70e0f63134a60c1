"""Reads that decide who sees what. Every team-owned query in Trainyard goes through `team_scope`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from webapp.accounts.models import Membership, Role, Team

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


def team_list_for_user(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).distinct()


def membership_get(*, user: AbstractBaseUser | AnonymousUser, team: Team | int) -> Membership | None:
    if not user.is_authenticated:
        return None
    team_id = team.pk if isinstance(team, Team) else team
    return Membership.objects.filter(user=user, team_id=team_id).select_related("team").first()


def membership_require(
    *, user: AbstractBaseUser | AnonymousUser, team: Team | int, role: str = Role.VIEWER
) -> Membership:
    """The user's membership in `team` with at least `role`, or PermissionDenied."""
    membership = membership_get(user=user, team=team)
    if membership is None or not membership.allows(role):
        raise PermissionDenied(f"This needs the {role} role in that team.")
    return membership


def team_scope(queryset: QuerySet, *, user: AbstractBaseUser | AnonymousUser, field: str = "team") -> QuerySet:
    """Restrict a queryset of team-owned objects to the teams the user belongs to."""
    if not user.is_authenticated:
        return queryset.none()
    return queryset.filter(**{f"{field}__memberships__user": user}).distinct()


def member_list(*, team: Team) -> QuerySet[Membership]:
    return Membership.objects.filter(team=team).select_related("user").order_by("user__username")
