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
HELPERS = {"smoke.py", "pg_setup.py", "step_timing.py"}  # modules the benches share, not benches
BENCHES = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name not in HELPERS)
POSTGRES = {"metrics_query.py", "ingest.py", "live_latency.py", "web_under_load.py"}
MARK = "TRAINYARD_BENCH_SMOKE"  # set in the bench's environment: every process it starts inherits it


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


def leftovers(mark: str) -> list[str]:
    """Processes the bench started (they inherit its environment's mark) that outlived it."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        try:
            if process.environ().get(MARK) == mark:
                found.append(f"{process.info['pid']}: {' '.join(process.info['cmdline'] or [])[:160]}")
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize("bench", BENCHES)
def test_the_bench_runs_in_smoke_mode_and_cleans_up(bench):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "TRAINYARD_DATA_DIR"}}
    mark = f"{bench}-{os.getpid()}-{time.time()}"
    env.update(PYTHONUNBUFFERED="1", **{MARK: mark})
    if bench in POSTGRES:
        url = postgres_url()
        if url is None:
            if os.environ.get("TRAINYARD_E2E") == "required":  # CI always has PostgreSQL
                pytest.fail("no PostgreSQL server for the PostgreSQL benches")
            pytest.skip("no PostgreSQL server here for the PostgreSQL benches")
        env["BENCH_POSTGRES_URL"] = url
    result = subprocess.run([sys.executable, f"bench/{bench}", "--smoke"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=600)  # fmt: skip
    output = f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert result.returncode == 0, output
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"metric", "value", "unit", "goal", "baseline"} <= set(line), line
    assert line.get("smoke") is True or line.get("skipped"), line
    deadline = time.monotonic() + 10
    while leftovers(mark) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(mark) == [], output
