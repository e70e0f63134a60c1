from __future__ import annotations

import time

from webapp.runs.models import FINAL_STATUSES, Run


def wait_for(predicate, *, timeout: float, interval: float = 0.5, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def wait_final(run: Run, timeout: float = 600) -> Run:
    def done():
        run.refresh_from_db()
        return run.status in FINAL_STATUSES

    wait_for(done, timeout=timeout, what=f"run {run.pk} to finish (status {run.status})")
    return run


def process_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
