"""Runs whose worker died: mark them failed ("worker lost") and remove what they left behind."""

from __future__ import annotations

import logging
import os
import signal
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from webapp.runs.models import Run, Status
from webapp.runs.services import run_fail

log = logging.getLogger(__name__)


def _kill_process_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap_lost_runs(*, stale_after: float | None = None) -> list[int]:
    stale_after = stale_after if stale_after is not None else settings.TRAINYARD_LOST_AFTER
    cutoff = timezone.now() - timedelta(seconds=stale_after)
    lost = Run.objects.filter(
        status__in=[Status.PROVISIONING, Status.RUNNING, Status.CANCELLING], heartbeat_at__lt=cutoff
    )
    reaped = []
    for run in lost:
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
        run_fail(run, f"worker lost: no heartbeat for more than {stale_after:.0f} s")
        reaped.append(run.pk)
    return reaped
