from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from tests.conftest import ROOT
from webapp.accounts.models import Membership, Team


def test_bootstrap_is_idempotent_and_prints_the_login(db):
    out = StringIO()
    call_command("bootstrap", "--skip-model", stdout=out)
    call_command("bootstrap", "--skip-model", stdout=out)
    assert get_user_model().objects.filter(username="demo").count() == 1
    assert Team.objects.filter(slug="demo").count() == 1
    assert Membership.objects.get(user__username="demo").role == "owner"
    assert "Demo login: user 'demo'" in out.getvalue()
    assert get_user_model().objects.get(username="demo").check_password("trainyard-demo")


def test_bootstrap_before_migrate_says_to_migrate_first(tmp_path):
    """A new user who runs `manage.py bootstrap` by hand on an empty database gets the fix in one line, not a
    `no such table` traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(TRAINYARD_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="webapp.settings")
    done = subprocess.run([sys.executable, "manage.py", "bootstrap", "--skip-model"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0
    assert "run `python manage.py migrate` first" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.slow
def test_a_first_start_is_quiet_and_leaves_no_redis_behind(tmp_path):
    """What `make demo` does on a fresh machine: Redis first, then migrate and bootstrap: no traceback, no warning,
    and the trust checks bootstrap queues reach the broker; then the demo's exit stops Redis."""
    from webapp.core.embedded_redis import is_running

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(TRAINYARD_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="webapp.settings", TRAINYARD_LOG_LEVEL="INFO")

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)

    socket_path = tmp_path / "redis.sock"
    assert manage("-m", "webapp.core.embedded_redis", "--background").returncode == 0
    try:
        assert is_running(socket_path)
        assert manage("manage.py", "migrate", "--noinput", "-v", "0").returncode == 0
        first = manage("manage.py", "bootstrap", "--skip-model")
        assert first.returncode == 0, first.stderr
        output = first.stdout + first.stderr
        assert "Traceback" not in output and "WARNING" not in output and "could not queue" not in output, output
        import redis

        queued = redis.Redis(unix_socket_path=str(socket_path)).llen("default")
        assert queued == 3  # one trust check per built-in, waiting for the cpu worker
    finally:
        assert manage("-m", "webapp.core.embedded_redis", "--stop").returncode == 0
    assert not is_running(socket_path)
