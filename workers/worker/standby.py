"""Processes kept ready per worker process, so a run starts in seconds: one trainer that has imported torch,
transformers and TRL (~7 s here) and waits on its stdin for the next run, and one environment server that has
imported OpenEnv (envs/providers/server_standby.py, ~5 s here).

Spawned when the worker's pool process starts and after each task, from its main thread: a standby dies with its
parent (PR_SET_PDEATHSIG follows the spawning thread). One that died meanwhile is replaced by a process started
from nothing, as before (TRAINYARD_STANDBY=0 always does that).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from celery.signals import celeryd_after_setup, task_postrun, worker_process_init, worker_process_shutdown

from envs.parent_death import child_environment
from webapp.artifacts.layout import env_logs_dir, process_logs_dir

log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[2]

_spare: subprocess.Popen | None = None
_trains = True  # does this worker take runs (the `gpu` queue)? Set before the pool forks; children inherit it.


def standby_enabled() -> bool:
    from django.conf import settings

    return bool(settings.TRAINYARD_STANDBY)


def standby_spawn() -> None:
    """Keep one spare trainer ready (no-op when one already waits or standby is off)."""
    global _spare
    if not standby_enabled() or (_spare is not None and _spare.poll() is None):
        return

    log_path = process_logs_dir() / f"trainer-standby-{os.getpid()}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        _spare = subprocess.Popen(
            [sys.executable, "-m", "workers.training.trainer", "--standby"], cwd=REPO_ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **child_environment()},
            stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def standby_take(run_id: int, log_path: Path) -> subprocess.Popen | None:
    """The spare trainer, handed `run_id` (it becomes that run's trainer), or None when none is alive."""
    global _spare
    spare, _spare = _spare, None
    if spare is None or spare.poll() is not None:
        return None
    try:
        spare.stdin.write(f"{run_id} {log_path}\n".encode())
        spare.stdin.close()
    except OSError:
        log.warning("the standby trainer did not take run %s; starting one from nothing", run_id)
        spare.kill()
        return None
    return spare


def standby_close() -> None:
    global _spare
    spare, _spare = _spare, None
    if spare is not None and spare.poll() is None:
        try:
            spare.stdin.close()  # it reads an empty line and exits
            spare.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            spare.kill()


def spares_spawn() -> None:
    """Both spares, each unless one waits already; only in a worker that takes runs, and the server only where
    runs start their environments as local processes."""
    if not standby_enabled() or not _trains:
        return
    from django.conf import settings

    from envs.providers.server_standby import spare_spawn

    try:
        standby_spawn()
        if settings.TRAINYARD_ENV_PROVIDER == "process":
            spare_spawn(env_logs_dir())
    except Exception:
        log.exception("could not start the standby processes")


@celeryd_after_setup.connect
def _note_queues(sender, instance, **kwargs) -> None:
    global _trains
    selected = set(instance.app.amqp.queues.consume_from or {})
    _trains = not selected or "gpu" in selected


@worker_process_init.connect
def _spawn_at_start(**kwargs) -> None:
    spares_spawn()


@task_postrun.connect
def _spawn_after_a_task(**kwargs) -> None:
    spares_spawn()  # the next run's processes import their libraries now, between tasks


@worker_process_shutdown.connect
def _close_at_shutdown(**kwargs) -> None:
    from envs.providers.server_standby import spare_close

    standby_close()
    spare_close()
