"""The Workers page: the workers that keep a heartbeat (host, GPUs, what they can run, what they run now) and the
run queue in order with how long each run has waited. Workers are shared by every team; runs are not: another
team's run shows as such, never by name."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from webapp.fleet.models import Worker
from webapp.runs.models import Run, Status


@dataclass(frozen=True)
class QueuedRun:
    position: int
    run: Run | None  # None: another team's run (counted, not shown)
    waited_s: float
    gpus: int


@dataclass(frozen=True)
class WorkerRow:
    worker: Worker
    alive: bool
    seen_s: float
    runs: list[Run | None]  # None: a run of another team


def fleet_state(*, team_ids: set[int]) -> dict:
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.TRAINYARD_WORKER_LOST_AFTER)
    workers = list(Worker.objects.all())
    running_ids = {run_id for w in workers for run_id in (w.current_runs or [])}
    running = Run.objects.filter(pk__in=running_ids).select_related("env_version__environment").in_bulk()
    rows = [
        WorkerRow(worker=w, alive=w.seen_at >= cutoff, seen_s=(now - w.seen_at).total_seconds(),
                  runs=[running[i] if i in running and running[i].team_id in team_ids else None
                        for i in (w.current_runs or [])])
        for w in workers
    ]  # fmt: skip
    queued = []
    for position, run in enumerate(
        Run.objects.filter(status=Status.QUEUED).select_related("env_version__environment").order_by("queued_at",
                                                                                                   "pk")[:500],
        start=1,
    ):  # fmt: skip
        waited = (now - (run.queued_at or run.created_at)).total_seconds()
        queued.append(QueuedRun(position=position, run=run if run.team_id in team_ids else None, waited_s=waited,
                                gpus=int((run.config or {}).get("gpus", 0))))  # fmt: skip
    return {"workers": rows, "queued": queued, "alive": sum(r.alive for r in rows),
            "gpus_alive": sum(len(r.worker.gpus or []) for r in rows if r.alive)}  # fmt: skip
