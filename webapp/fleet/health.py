"""Real pings of the parts Trainyard needs: the database, Redis and workers for both queues (from their recorded
heartbeats, so /healthz stays fast)."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str

    def as_dict(self) -> dict:
        return {"ok": self.ok, "detail": self.detail}


def check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return Check(False, f"{type(exc).__name__}: {exc}")
    return Check(True, connection.vendor)


def check_redis() -> Check:
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
        client.ping()
        client.close()
    except Exception as exc:
        return Check(False, f"{type(exc).__name__}: {exc}")
    return Check(True, "pong")


def check_workers_recorded() -> Check:
    """From the workers' heartbeat rows: one query, no broadcast (/healthz answers in milliseconds)."""
    from webapp.fleet.selectors import workers_alive

    try:
        names = list(workers_alive().values_list("name", "queues"))
    except Exception as exc:
        return Check(False, f"{type(exc).__name__}: {exc}")
    if not names:
        return Check(False, f"no worker has beaten in the last {settings.TRAINYARD_WORKER_LOST_AFTER} s")
    queues = sorted({q for _, qs in names for q in qs})
    missing = [q for q in ("gpu", "default") if q not in queues]
    detail = ", ".join(name for name, _ in names) + (f" (no worker takes {', '.join(missing)})" if missing else "")
    return Check(not missing, detail)


def check_workers(timeout: float = 1.0) -> Check:
    """A live broadcast to the workers: what a command that waits for one uses."""
    from webapp.celery_app import app

    try:
        replies = app.control.ping(timeout=timeout)
    except Exception as exc:
        return Check(False, f"{type(exc).__name__}: {exc}")
    if not replies:
        return Check(False, "no worker answered")
    return Check(True, ", ".join(sorted(name for reply in replies for name in reply)))


def system_health() -> dict[str, Check]:
    database = check_database()
    redis_check = check_redis()
    workers = check_workers_recorded() if database.ok else Check(False, "the database is down")
    return {"database": database, "redis": redis_check, "worker": workers}
