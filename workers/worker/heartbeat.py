"""A worker's heartbeat: every few seconds its row in the fleet table (host, GPUs, queues, the runs it executes),
and a look at the runs recorded on its host whose worker process is gone, which it fails at once (their trainer
and environment servers have died with that process; anything left is killed). A restarted worker therefore cleans
up after the one before it in its first beat, and any live worker on the host does it within one beat."""

from __future__ import annotations

import logging
import os
import threading

import psutil
from celery.signals import worker_process_init, worker_ready, worker_shutdown

from workers.worker.host_identity import host_identity

log = logging.getLogger(__name__)

_stop = threading.Event()


def worker_gpus(cuda_devices: int = 0) -> list[int]:
    """TRAINYARD_GPUS ("0,1"), else CUDA_VISIBLE_DEVICES, else every CUDA device it sees; none: a CPU worker."""
    raw = os.environ.get("TRAINYARD_GPUS", os.environ.get("CUDA_VISIBLE_DEVICES"))
    if raw is None:
        return list(range(cuda_devices))
    return [int(part) for part in raw.replace(" ", "").split(",") if part.isdigit()]


@worker_process_init.connect
def _pin_gpus(**kwargs) -> None:
    """A worker given TRAINYARD_GPUS shows its trainers those GPUs only (its processes, standby included, inherit
    CUDA_VISIBLE_DEVICES), so two workers on one machine never train on the same GPU."""
    wanted = os.environ.get("TRAINYARD_GPUS")
    if wanted is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = wanted


def process_gone(pid: int, *, started_before: float | None = None) -> bool:
    """True when no such process runs, or only a zombie, or a newer process that reuses the pid (a restarted
    container numbers its processes the same way)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return True
        return started_before is not None and process.create_time() > started_before + 1
    except psutil.NoSuchProcess:
        return True


def gone_workers(records, started_field: str) -> list:
    """The records (runs, evaluations) whose executing worker process, named in `worker_host`, is gone."""
    found = []
    for record in records:
        pid = record.worker_host.rsplit(":", 1)[1]
        started = getattr(record, started_field)
        if pid.isdigit() and process_gone(int(pid), started_before=started.timestamp() if started else None):
            found.append(record)
    return found


def orphans_reap(host: str) -> None:
    """Work of every kind recorded on this host whose executing worker process is gone: reaped now (its subprocess and
    servers died with that worker; anything left is killed)."""
    from workers.worker.reaper import work_on_workers

    for kind in work_on_workers():
        for record in gone_workers(kind.active.filter(worker_host__startswith=f"{host}:"), kind.started_field):
            log.warning("%s %s: its worker process %s is gone; failing it", kind.name, record.pk, record.worker_host)
            kind.reap(record, f"its worker process ({record.worker_host}) died")


def beat(*, name: str, queues: list[str], started_at, capabilities: dict | None = None,
         deployment: dict | None = None) -> None:  # fmt: skip
    from django.utils import timezone

    from webapp.fleet.models import Worker
    from webapp.runs.models import Run, Status

    host = host_identity()
    orphans_reap(host)
    mine = {str(os.getpid())} | {str(child.pid) for child in psutil.Process().children(recursive=True)}
    current = [
        run_id
        for run_id, where in Run.objects.filter(
            status__in=[Status.PROVISIONING, Status.RUNNING, Status.CANCELLING], worker_host__startswith=f"{host}:"
        ).values_list("pk", "worker_host")
        if where.rsplit(":", 1)[1] in mine
    ]
    Worker.objects.update_or_create(
        name=name,
        defaults={"host": host, "pid": os.getpid(), "queues": queues, "current_runs": current,
                  "gpus": worker_gpus((capabilities or {}).get("cuda_devices", 0)),
                  "capabilities": capabilities or {}, "deployment": deployment or {}, "started_at": started_at,
                  "seen_at": timezone.now()},
    )  # fmt: skip


DEPLOYMENT_EVERY = 60  # beats: about five minutes


def deployment_say(name: str, report: dict) -> None:
    """At start, in the worker's log: a store it cannot use, or settings that differ from the other hosts'."""
    from webapp.fleet.deployment import deployment_differences
    from webapp.fleet.models import Worker

    if report["store_problem"]:
        log.error("worker %s cannot use the artifact store %s: %s", name, report["store"], report["store_problem"])
    others = Worker.objects.exclude(name=name).exclude(host=host_identity()).exclude(deployment={})
    for other in others.order_by("-seen_at")[:20]:
        theirs = f"worker {other.name}'s"
        for difference in deployment_differences({**report, "store_problem": ""}, other.deployment, theirs=theirs):
            log.error("worker %s: %s", name, difference)


def beat_forever(*, name: str, queues: list[str], interval: float) -> None:
    from django.db import close_old_connections
    from django.utils import timezone

    from webapp.fleet.deployment import deployment_report
    from workers.worker.capabilities import worker_capabilities

    started_at = timezone.now()
    capabilities = None  # measured after the first beat (a subprocess that imports torch: seconds)
    deployment, beats = None, 0
    while True:
        try:
            close_old_connections()
            if beats % DEPLOYMENT_EVERY == 0:  # the store's reachability and the cache's size, now and then
                deployment = deployment_report()
                if beats == 0:
                    deployment_say(name, deployment)
            beats += 1
            beat(name=name, queues=queues, started_at=started_at, capabilities=capabilities, deployment=deployment)
            if capabilities is None:
                capabilities = worker_capabilities()
                beat(name=name, queues=queues, started_at=started_at, capabilities=capabilities,
                     deployment=deployment)  # fmt: skip
        except Exception:
            log.exception("worker heartbeat failed; trying again in %.0f s", interval)
        if _stop.wait(interval):
            return


@worker_ready.connect
def _start_beating(sender, **kwargs) -> None:
    from django.conf import settings

    queues = sorted(q.name for q in sender.task_consumer.queues) if sender.task_consumer else []
    threading.Thread(
        target=beat_forever,
        kwargs={"name": sender.hostname, "queues": queues, "interval": settings.TRAINYARD_WORKER_BEAT},
        daemon=True,
        name="trainyard-heartbeat",
    ).start()


@worker_shutdown.connect
def _stop_beating(sender, **kwargs) -> None:
    """A worker that stops cleanly leaves the fleet at once; one that dies ages out of it."""
    _stop.set()
    try:
        from webapp.fleet.models import Worker

        Worker.objects.filter(name=sender.hostname).delete()
    except Exception:
        log.warning("could not remove this worker's heartbeat row", exc_info=True)
