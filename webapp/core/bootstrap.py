"""What `manage.py bootstrap` does. Later parts add steps to BOOTSTRAP_STEPS; each step must be idempotent."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TextIO

from django.contrib.auth import get_user_model
from django.db import transaction

from webapp.accounts.models import Membership, Role, Team

DEMO_USERNAME = "demo"
DEMO_TEAM_SLUG = "demo"


def demo_user_and_team(stdout: TextIO) -> tuple:
    password = os.environ.get("TRAINYARD_DEMO_PASSWORD", "trainyard-demo")
    User = get_user_model()
    with transaction.atomic():
        user, created = User.objects.get_or_create(username=DEMO_USERNAME, defaults={"is_staff": True})
        if created:
            user.set_password(password)
            user.save()
        team, _ = Team.objects.get_or_create(slug=DEMO_TEAM_SLUG, defaults={"name": "Demo team"})
        Membership.objects.get_or_create(team=team, user=user, defaults={"role": Role.OWNER})
    stdout.write(f"Demo login: user {DEMO_USERNAME!r}, password {password!r} (team {team.name!r})\n")
    return user, team


BOOTSTRAP_STEPS: list[Callable[..., None]] = []


def run_bootstrap(*, stdout: TextIO, skip_model: bool = False) -> None:
    user, team = demo_user_and_team(stdout)
    for step in BOOTSTRAP_STEPS:
        step(stdout=stdout, user=user, team=team, skip_model=skip_model)
