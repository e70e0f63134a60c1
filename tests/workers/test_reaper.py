from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.webapp.runs.conftest import register_builtin
from tests.workers.conftest import process_alive
from webapp.runs.models import Status
from webapp.runs.services import run_create, run_transition
from workers.worker.host_identity import host_identity
from workers.worker.reaper import reap_lost_runs


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_died_is_failed_and_its_processes_killed(acme):
    version = register_builtin(acme, "guess-number")
    run = run_create(team=acme, user=None, env_version=version, start=False)
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        run_transition(run, Status.PROVISIONING, worker_host=f"{host_identity()}:{os.getpid()}")
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


@pytest.mark.django_db(transaction=True)
def test_the_reaper_never_kills_a_pid_of_another_host(acme):
    """A pid names a process only on its own host: a run lost on another machine is failed, and nothing here with
    that pid is touched."""
    version = register_builtin(acme, "guess-number")
    run = run_create(team=acme, user=None, env_version=version, start=False)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        run_transition(run, Status.PROVISIONING, worker_host=f"another-host#4026531836:{bystander.pid}")
        run_transition(run, Status.RUNNING, trainer_pid=bystander.pid,
                       heartbeat_at=timezone.now() - timedelta(minutes=10))  # fmt: skip
        assert reap_lost_runs(stale_after=120) == [run.pk]
        run.refresh_from_db()
        assert run.status == Status.FAILED and run.failure_reason.startswith("worker lost")
        assert process_alive(bystander.pid)
    finally:
        bystander.kill()


def dead_pid() -> int:
    """A pid that no process has any more."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_trainer_recorded_success_is_not_failed_by_the_reaper(acme):
    version = register_builtin(acme, "guess-number")
    run = run_create(team=acme, user=None, env_version=version, start=False)
    run_transition(run, Status.PROVISIONING)
    run_transition(run, Status.RUNNING, trainer_outcome="succeeded",
                   heartbeat_at=timezone.now() - timedelta(minutes=10))  # fmt: skip
    assert reap_lost_runs(stale_after=120) == [run.pk]
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED and run.failure_reason == ""


@pytest.mark.django_db(transaction=True)
def test_a_starting_worker_fails_at_once_the_runs_whose_worker_process_is_gone(acme):
    from webapp.fleet.models import Worker
    from workers.worker.heartbeat import beat

    version = register_builtin(acme, "guess-number")
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        lost = run_create(team=acme, user=None, env_version=version, start=False)
        run_transition(lost, Status.PROVISIONING, worker_host=f"{host_identity()}:{dead_pid()}",
                       heartbeat_at=timezone.now())  # fmt: skip
        run_transition(lost, Status.RUNNING, trainer_pid=orphan.pid)
        alive = run_create(team=acme, user=None, env_version=version, start=False)
        run_transition(alive, Status.PROVISIONING, worker_host=f"{host_identity()}:{os.getpid()}",
                       heartbeat_at=timezone.now())  # fmt: skip
        elsewhere = run_create(team=acme, user=None, env_version=version, start=False)
        run_transition(elsewhere, Status.PROVISIONING, worker_host=f"another-host:{dead_pid()}",
                       heartbeat_at=timezone.now())  # fmt: skip
        beat(name="w@here", queues=["default", "gpu"], started_at=timezone.now())
        orphan.wait(timeout=10)
        for run in (lost, alive, elsewhere):
            run.refresh_from_db()
        assert lost.status == Status.FAILED and "its worker process" in lost.failure_reason
        assert not process_alive(orphan.pid)
        assert alive.status == Status.PROVISIONING and elsewhere.status == Status.PROVISIONING
        row = Worker.objects.get(name="w@here")
        assert row.host == host_identity() and row.queues == ["default", "gpu"] and row.current_runs == [alive.pk]
    finally:
        orphan.kill()


@pytest.mark.django_db(transaction=True)
def test_runs_of_a_host_whose_workers_stopped_beating_are_reaped(acme, settings):
    from webapp.fleet.models import Worker

    version = register_builtin(acme, "guess-number")
    long_ago = timezone.now() - timedelta(minutes=5)
    Worker.objects.create(name="gpu@box-a", host="box-a", pid=10, queues=["gpu"], started_at=long_ago,
                          seen_at=long_ago)  # fmt: skip
    Worker.objects.create(name="gpu@box-b", host="box-b", pid=10, queues=["gpu"], started_at=long_ago,
                          seen_at=timezone.now())  # fmt: skip
    runs = {}
    for host in ("box-a", "box-b"):
        runs[host] = run_create(team=acme, user=None, env_version=version, start=False)
        run_transition(runs[host], Status.PROVISIONING, worker_host=f"{host}:10", heartbeat_at=timezone.now())
        run_transition(runs[host], Status.RUNNING, heartbeat_at=timezone.now())
    from webapp.runs.models import Run

    Run.objects.update(provisioning_at=long_ago)
    assert reap_lost_runs(stale_after=120) == [runs["box-a"].pk]
    runs["box-a"].refresh_from_db()
    assert runs["box-a"].status == Status.FAILED and "no worker on box-a" in runs["box-a"].failure_reason


def test_a_worker_in_another_pid_namespace_of_the_same_host_judges_no_pid():
    """Containers on the host network share its hostname, not its pids: their identities differ."""
    import socket

    assert host_identity().startswith(socket.gethostname())
    assert host_identity() != socket.gethostname()  # Linux: the pid namespace is part of it
