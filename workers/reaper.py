"""Runs whose worker died: end them honestly and remove what they left behind.

Two ways to notice: a worker on the same host sees the run's worker process gone (workers/heartbeat.py, within
one beat), and beat's periodic reap sees a run whose host has no live worker, or whose heartbeat stopped.
A run whose trainer recorded that it finished is marked as it finished, never failed."""

from __future__ import annotations

import logging
import os
import signal
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from webapp.runs.models import Run, Status
from webapp.runs.services import IllegalTransition, run_fail, run_transition

log = logging.getLogger(__name__)

ACTIVE_ON_A_WORKER = [Status.PROVISIONING, Status.RUNNING, Status.CANCELLING]


def _kill_process_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_leftovers_kill(run: Run) -> None:
    """The trainer's process group, the process provider's servers and the run's containers."""
    if run.trainer_pid:
        _kill_process_group(run.trainer_pid)
    deployment = run.deployment or {}
    if deployment.get("provider") == "process":
        for pid in deployment.get("handles", []):
            if isinstance(pid, int):
                _kill_process_group(pid)
    if deployment.get("provider") == "docker" or run.provider == "docker":
        try:
            from webapp.catalog.deployments import provider_get

            provider_get("docker").reap(run=str(run.pk))
        except Exception:
            log.exception("could not reap the containers of run %s", run.pk)


def run_reap(run: Run, reason: str) -> Run:
    run_leftovers_kill(run)
    run.refresh_from_db()
    try:
        if run.trainer_outcome == "succeeded" and run.status in (Status.RUNNING, Status.CANCELLING):
            return run_transition(run, Status.SUCCEEDED)
        if run.trainer_outcome == "stopped" and run.status == Status.CANCELLING:
            return run_transition(run, Status.CANCELLED)
    except IllegalTransition:
        pass
    return run_fail(run, reason)


def reap_lost_runs(*, stale_after: float | None = None) -> list[int]:
    from webapp.fleet.selectors import workers_alive

    stale_after = stale_after if stale_after is not None else settings.TRAINYARD_LOST_AFTER
    now = timezone.now()
    active = Run.objects.filter(status__in=ACTIVE_ON_A_WORKER)
    silent = active.filter(heartbeat_at__lt=now - timedelta(seconds=stale_after))
    # A host whose workers all stopped beating: its runs are gone too. Runs of hosts that never recorded a
    # worker heartbeat (an older worker) are left to the heartbeat rule above.
    live_hosts = set(workers_alive().values_list("host", flat=True))
    from webapp.fleet.models import Worker

    known_hosts = set(Worker.objects.values_list("host", flat=True))
    dead_hosts = known_hosts - live_hosts
    grace = now - timedelta(seconds=settings.TRAINYARD_WORKER_LOST_AFTER)
    host_gone = active.filter(
        Q(*[Q(worker_host__startswith=f"{host}:") for host in dead_hosts], _connector=Q.OR), provisioning_at__lt=grace
    ) if dead_hosts else active.none()  # fmt: skip
    reaped = []
    for run in host_gone:
        run_reap(run, f"worker lost: no worker on {run.worker_host.rsplit(':', 1)[0]} has beaten for "
                      f"{settings.TRAINYARD_WORKER_LOST_AFTER} s")  # fmt: skip
        reaped.append(run.pk)
    for run in silent.exclude(pk__in=reaped):
        run_reap(run, f"worker lost: no heartbeat for more than {stale_after:.0f} s")
        reaped.append(run.pk)
    return reaped
