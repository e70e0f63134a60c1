"""The Workers page's reading of the fleet: the workers that keep a heartbeat (host, GPUs, what they can run, what
they run now) and the work waiting for them in order, with how long each has waited. Workers are shared by every
team; work is not: another team's run or evaluation shows as such, never by name. The work itself is read through
the kinds registered with the one door (webapp.core.work_queue), so the fleet depends on no app of work."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from webapp.core.work_queue import WorkItem, work_kinds, work_waiting
from webapp.fleet.deployment import deployment_differences, deployment_settings
from webapp.fleet.models import Worker

RUN_QUEUE = "gpu"


@dataclass(frozen=True)
class Waiting:
    position: int
    item: WorkItem | None  # None: another team's work (counted, not shown)
    kind: str
    waited_s: float
    gpus: int


@dataclass(frozen=True)
class WorkerRow:
    worker: Worker
    alive: bool
    seen_s: float
    runs: list[WorkItem | None]  # None: a run of another team


@dataclass(frozen=True)
class HostRow:
    """A machine (hostname and pid namespace) and its workers, with what its latest report says about the store."""

    host: str
    workers: int
    alive: int
    store_ok: bool | None  # None: no report yet (a worker of an older version)
    cache_bytes: int | None
    problems: list[str]


def hosts_of(rows: list[WorkerRow]) -> list[HostRow]:
    reference = deployment_settings()
    hosts = []
    for host in sorted({r.worker.host for r in rows}):
        mine = [r for r in rows if r.worker.host == host]
        latest = max(mine, key=lambda r: r.worker.seen_at).worker.deployment or {}
        hosts.append(HostRow(
            host=host, workers=len(mine), alive=sum(r.alive for r in mine),
            store_ok=(not latest["store_problem"]) if "store_problem" in latest else None,
            cache_bytes=latest.get("cache_bytes"),
            problems=deployment_differences(latest, reference) if latest else [],
        ))  # fmt: skip
    return hosts


def fleet_state(*, team_ids: set[int]) -> dict:
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.TRAINYARD_WORKER_LOST_AFTER)
    workers = list(Worker.objects.order_by("host", "name"))
    running_ids = sorted({run_id for w in workers for run_id in (w.current_runs or [])})
    run_kind = work_kinds().get("run")
    running = run_kind.described(running_ids) if run_kind and running_ids else {}

    def mine(item: WorkItem | None) -> WorkItem | None:
        return item if item is not None and item.team_id in team_ids else None

    rows = [
        WorkerRow(worker=w, alive=w.seen_at >= cutoff, seen_s=(now - w.seen_at).total_seconds(),
                  runs=[mine(running.get(i)) for i in (w.current_runs or [])])
        for w in workers
    ]  # fmt: skip
    queued = [
        Waiting(position=position, item=mine(item), kind=item.kind, gpus=item.gpus,
                waited_s=(now - item.waiting_since).total_seconds() if item.waiting_since else 0.0)
        for position, item in enumerate(work_waiting(queue=RUN_QUEUE), start=1)
    ]  # fmt: skip
    return {"workers": rows, "hosts": hosts_of(rows), "queued": queued, "alive": sum(r.alive for r in rows),
            "gpus_alive": sum(len(r.worker.gpus or []) for r in rows if r.alive)}  # fmt: skip
