"""Every bench still runs: each `bench/NAME.py --smoke` (a few seconds at tiny sizes) exits 0, prints its one JSON line
last with the fields every bench promises, and leaves no process behind. Its figures are not judged here: speed goals
live in the benches, measured against their baselines, never in tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHES = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name not in {"smoke.py", "pg_setup.py"})
POSTGRES = {"metrics_query.py", "ingest.py", "live_latency.py", "web_under_load.py"}
# What a bench may start and must stop: servers, workers, trainers, Redis.
SERVERS = ("redis-server", "daphne", "celery", "envs.providers.serve", "workers.training", "http.server")


def postgres_url() -> str | None:
    """The PostgreSQL server the PG benches make their scratch database on: CI's, or this machine's."""
    url = os.environ.get("BENCH_POSTGRES_URL") or os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        return url.rsplit("/", 1)[0] + "/postgres"
    try:
        import psycopg

        psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", connect_timeout=2).close()
    except Exception:
        return None
    return "postgres://postgres@127.0.0.1:5432/postgres"


def leftovers(since: float) -> list[str]:
    """Servers started since `since` that outlived the bench (not this test session's own, such as a live worker's)."""
    ours = {child.pid for child in psutil.Process().children(recursive=True)}
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "create_time"]):
        command = " ".join(process.info["cmdline"] or [])
        if process.info["pid"] in ours:
            continue
        if process.info["create_time"] >= since and any(name in command for name in SERVERS):
            found.append(f"{process.info['pid']}: {command[:160]}")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("bench", BENCHES)
def test_the_bench_runs_in_smoke_mode_and_cleans_up(bench):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "TRAINYARD_DATA_DIR"}}
    env["PYTHONUNBUFFERED"] = "1"
    if bench in POSTGRES:
        url = postgres_url()
        if url is None:
            if os.environ.get("TRAINYARD_E2E") == "required":  # CI always has PostgreSQL
                pytest.fail("no PostgreSQL server for the PostgreSQL benches")
            pytest.skip("no PostgreSQL server here for the PostgreSQL benches")
        env["BENCH_POSTGRES_URL"] = url
    started = time.time()
    result = subprocess.run([sys.executable, f"bench/{bench}", "--smoke"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=600)  # fmt: skip
    output = f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert result.returncode == 0, output
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"metric", "value", "unit", "goal", "baseline"} <= set(line), line
    assert line.get("smoke") is True or line.get("skipped"), line
    deadline = time.monotonic() + 10
    while leftovers(started) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(started) == [], output
