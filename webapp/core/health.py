"""Real pings of the parts Trainyard needs: the database, Redis and at least one Celery worker."""

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


def check_workers(timeout: float = 1.0) -> Check:
    from workers.celery_app import app

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
    workers = check_workers() if redis_check.ok else Check(False, "redis is down")
    return {"database": database, "redis": redis_check, "worker": workers}
