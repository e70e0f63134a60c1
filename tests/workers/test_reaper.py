from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.webapp.runs.conftest import register_builtin
from tests.workers.conftest import process_alive
from webapp.runs.models import Status
from webapp.runs.services import run_create, run_transition
from workers.reaper import reap_lost_runs


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_died_is_failed_and_its_processes_killed(acme):
    version = register_builtin(acme, "guess-number")
    run = run_create(team=acme, user=None, env_version=version, start=False)
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        run_transition(run, Status.PROVISIONING)
        run_transition(run, Status.RUNNING, trainer_pid=orphan.pid,
                       heartbeat_at=timezone.now() - timedelta(minutes=10))  # fmt: skip
        fresh = run_create(team=acme, user=None, env_version=version, start=False)
        run_transition(fresh, Status.PROVISIONING, heartbeat_at=timezone.now())
        assert reap_lost_runs(stale_after=120) == [run.pk]
        orphan.wait(timeout=10)
        run.refresh_from_db()
        fresh.refresh_from_db()
        assert run.status == Status.FAILED and run.failure_reason.startswith("worker lost")
        assert fresh.status == Status.PROVISIONING
        assert not process_alive(orphan.pid)
    finally:
        orphan.kill()
