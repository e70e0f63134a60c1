"""The web's part of `manage.py bootstrap` (workers/cli): the demo team and user and the built-in environments; every
step is idempotent."""

from __future__ import annotations

import os
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


def demo_bootstrap(*, stdout: TextIO) -> None:
    """The demo team and user, and the built-in environments registered for that team."""
    from webapp.catalog.services import builtins_register

    user, team = demo_user_and_team(stdout)
    versions = builtins_register(team=team, user=user, progress=lambda m: stdout.write(f"… {m}\n"))
    stdout.write(f"Built-in environments: {', '.join(str(v) for v in versions)}\n")
