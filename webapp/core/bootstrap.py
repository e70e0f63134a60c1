"""What `manage.py bootstrap` does; every step is idempotent."""

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


def run_bootstrap(*, stdout: TextIO, skip_model: bool = False) -> None:
    from webapp.catalog.services import builtins_register

    user, team = demo_user_and_team(stdout)
    versions = builtins_register(team=team, user=user, progress=lambda m: stdout.write(f"… {m}\n"))
    stdout.write(f"Built-in environments: {', '.join(str(v) for v in versions)}\n")
    if not skip_model:
        from django.conf import settings
        from tqdm import tqdm

        from workers.tiny_model import ensure_tiny_model, tiny_model_dir

        if not (tiny_model_dir(settings.DATA_DIR) / "config.json").exists():
            stdout.write("Building the tiny local model (once; a few CPU minutes)\n")
        bar = tqdm(total=100, unit="%", bar_format="{l_bar}{bar}| {n:.0f}% {postfix}", leave=False)

        def show(message: str, fraction: float) -> None:
            bar.n = round(fraction * 100)
            bar.set_postfix_str(message)
            bar.refresh()

        path = ensure_tiny_model(settings.DATA_DIR, progress=show)
        bar.close()
        stdout.write(f"Model tiny-local (CPU): {path}\n")
