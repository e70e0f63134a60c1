"""Shared by the PostgreSQL benches: a scratch database of their own, migrated, and Django set up on it."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ADMIN_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
BENCH_DB = "trainyard_bench"
_started_redis: list[Path] = []


def setup() -> None:
    import psycopg

    with psycopg.connect(ADMIN_URL.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    os.environ["DATABASE_URL"] = ADMIN_URL.rsplit("/", 1)[0] + "/" + BENCH_DB
    os.environ.setdefault("TRAINYARD_DATA_DIR", tempfile.mkdtemp(prefix="trainyard-bench-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    if settings.REDIS_IS_EMBEDDED:
        from webapp.core.embedded_redis import ensure_running

        if ensure_running(Path(settings.EMBEDDED_REDIS_SOCKET)):
            _started_redis.append(Path(settings.EMBEDDED_REDIS_SOCKET))
    call_command("migrate", verbosity=0)


def make_run():
    from webapp.accounts.models import Team
    from webapp.catalog.models import Environment, EnvironmentVersion
    from webapp.runs.models import Run

    team = Team.objects.create(name="bench", slug="bench")
    env = Environment.objects.create(team=team, name="bench", slug="bench")
    version = EnvironmentVersion.objects.create(environment=env, label="1", source_kind="builtin",
                                                source_ref="guess-number", pinned_ref="x")  # fmt: skip
    return Run.objects.create(team=team, name="bench", env_version=version, model_name="tiny-local",
                              config={"num_generations": 4}, max_steps=10**7)  # fmt: skip


def teardown() -> None:
    import psycopg
    from django.db import connections

    from webapp.core.embedded_redis import stop
    from webapp.live.publish import close_layer

    try:
        close_layer()
    finally:
        for socket_path in _started_redis:
            stop(socket_path)
    connections.close_all()
    with psycopg.connect(ADMIN_URL.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
