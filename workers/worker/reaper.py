"""Work whose worker died — runs and evaluations alike: end it honestly and remove what it left behind.

Three ways to notice, the same for both kinds of work:
- a worker on the same host (same hostname and pid namespace) sees the work's worker process gone: it fails it in
  its next beat (workers/worker/heartbeat.py), within seconds;
- beat's reap (every 10 s) sees work whose host has no live worker any more (the fleet's heartbeat rows, silent for
  TRAINYARD_WORKER_LOST_AFTER): the only sign that crosses machines;
- beat's reap sees work whose own heartbeat stopped for TRAINYARD_LOST_AFTER (a run: its trainer; an evaluation: its
  worker's supervision loop; either: the worker itself while it provisions).
A worker that is alive and busy (provisioning slowly, its machine loaded) keeps beating, so its work is never
failed. A run whose trainer recorded that it finished is marked as it finished, never failed.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from webapp.evals.models import EvalStatus, Evaluation
from webapp.evals.services import evaluation_fail
from webapp.runs.models import Kind, Run, Status
from webapp.runs.services import IllegalTransition, run_fail, run_transition
from workers.worker.host_identity import host_identity

log = logging.getLogger(__name__)


def _kill_process_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def on_this_host(worker_host: str) -> bool:
    """Pids name processes only in their own host and pid namespace: another machine's are not ours to kill."""
    return worker_host.rsplit(":", 1)[0] == host_identity()


def leftovers_kill(record: Any, *, subprocess_pid: int | None, label: str) -> None:
    """The work's subprocess group and the process provider's servers (on this host only), and its containers."""
    records = _records(record.deployment)
    if on_this_host(record.worker_host or ""):
        if subprocess_pid:
            _kill_process_group(subprocess_pid)
        for one in records:
            if one.get("provider") == "process":
                for pid in one.get("handles", []):
                    if isinstance(pid, int):
                        _kill_process_group(pid)
    _slurm_job_cancel(getattr(record, "slurm_job", None) or {})
    if record.provider == "docker" or any(one.get("provider") == "docker" for one in records):
        try:
            from webapp.catalog.deployments import provider_get

            provider_get("docker").reap(**{label: str(record.pk)})
        except Exception:
            log.exception("could not reap the containers of %s %s", label, record.pk)


def _slurm_job_cancel(job: dict) -> None:
    """A lost run's Slurm job would train on for a run that has ended: where this host reaches the cluster (the
    slurm queue's login node), it is cancelled too."""
    from workers.worker.slurm import ENDED

    if job.get("id") and job.get("state") not in ENDED and shutil.which("scancel"):
        subprocess.run(["scancel", str(job["id"])], capture_output=True, timeout=30)


def _records(deployment: dict | None) -> list[dict]:
    """The deployment records of a run (its own, then a mixed run's others) or of an evaluation (one per key)."""
    deployment = deployment or {}
    if "provider" in deployment:
        return [deployment, *(deployment.get("environments") or {}).values()]
    return [d for d in deployment.values() if isinstance(d, dict)]


def run_reap(run: Run, reason: str) -> Run:
    from webapp.evals.services import training_evaluations_close

    leftovers_kill(run, subprocess_pid=run.trainer_pid, label="run")
    training_evaluations_close(run, reason=f"its run's worker is gone: {reason}")
    run.refresh_from_db()
    try:
        if run.trainer_outcome == "succeeded" and run.status in (Status.RUNNING, Status.CANCELLING):
            return run_transition(run, Status.SUCCEEDED)
        if run.trainer_outcome == "stopped" and run.status == Status.CANCELLING:
            return run_transition(run, Status.CANCELLED)
    except IllegalTransition:
        pass
    return run_fail(run, reason)


def evaluation_reap(evaluation: Evaluation, reason: str) -> None:
    leftovers_kill(evaluation, subprocess_pid=evaluation.evaluator_pid, label="evaluation")
    evaluation_fail(evaluation.pk, reason)


@dataclass(frozen=True)
class WorkOnWorkers:
    """A kind of work that a worker executes, as the reaper sees it."""

    name: str
    active: QuerySet  # on a worker now: provisioning, running, cancelling
    started_field: str  # when its worker claimed it
    reap: Any  # (record, reason) -> None


def work_on_workers() -> list[WorkOnWorkers]:
    return [
        # An external run has no worker: its client's silence crashes it (webapp/runs/external.py).
        WorkOnWorkers("run", Run.objects.filter(status__in=[Status.PROVISIONING, Status.RUNNING, Status.CANCELLING],
                                                kind=Kind.WORKER), "provisioning_at", run_reap),
        WorkOnWorkers("evaluation", Evaluation.objects.filter(
            status__in=[EvalStatus.PROVISIONING, EvalStatus.RUNNING, EvalStatus.CANCELLING], run__isnull=True),
            "started_at", evaluation_reap),
    ]  # fmt: skip


def reap_lost(*, stale_after: float | None = None) -> dict[str, list[int]]:
    """Beat's reap: work of hosts with no live worker, and work whose heartbeat stopped. Returns the ids reaped."""
    from webapp.fleet.models import Worker
    from webapp.fleet.selectors import workers_alive

    stale_after = stale_after if stale_after is not None else settings.TRAINYARD_LOST_AFTER
    now = timezone.now()
    # A host whose workers all stopped beating: its work is gone too. Work of hosts that never recorded a worker
    # heartbeat (an older worker) is left to the heartbeat rule.
    live_hosts = set(workers_alive().values_list("host", flat=True))
    dead_hosts = set(Worker.objects.values_list("host", flat=True)) - live_hosts
    grace = now - timedelta(seconds=settings.TRAINYARD_WORKER_LOST_AFTER)
    reaped: dict[str, list[int]] = {}
    for kind in work_on_workers():
        done = reaped.setdefault(kind.name, [])
        if dead_hosts:
            on_dead_hosts = kind.active.filter(
                Q(*[Q(worker_host__startswith=f"{host}:") for host in dead_hosts], _connector=Q.OR),
                **{f"{kind.started_field}__lt": grace},
            )
            for record in on_dead_hosts:
                host = record.worker_host.rsplit(":", 1)[0]
                kind.reap(record, f"worker lost: no worker on {host} has beaten for "
                                  f"{settings.TRAINYARD_WORKER_LOST_AFTER} s")  # fmt: skip
                done.append(record.pk)
        silent = kind.active.filter(heartbeat_at__lt=now - timedelta(seconds=stale_after)).exclude(pk__in=done)
        for record in silent:
            kind.reap(record, f"worker lost: no heartbeat for more than {stale_after:.0f} s")
            done.append(record.pk)
    return reaped


def reap_lost_runs(*, stale_after: float | None = None) -> list[int]:
    """The runs `reap_lost` reaped (its evaluations reaped too)."""
    return reap_lost(stale_after=stale_after)["run"]
