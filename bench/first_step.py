"""Seconds from `run create` to the run's first recorded metric step, on a warm worker, with the tiny model.

A real `celery worker` (the process provider, the embedded Redis, SQLite in a data folder of its own) plays one
run to warm up, then the measured runs one after another: each is timed from just before `run_create` to the first
MetricPoint row the trainer writes. Baseline, measured in the same run: a bare `python -c "import trl"` (what a
trainer that starts from nothing pays before it can do anything). One JSON line last (goal <= 5 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smoke import HELP, smoke_marked

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = Path(tempfile.mkdtemp(prefix="trainyard-bench-first-step-"))
os.environ["TRAINYARD_DATA_DIR"] = str(DATA)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.pop("DATABASE_URL", None)  # SQLite in the bench's own folder: nothing of a real deployment is touched
os.environ.pop("REDIS_URL", None)
os.environ["TRAINYARD_TRUST_ON_ADD"] = "0"  # no trust check competes with the runs for the worker

CONFIG = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 128,
          "max_tool_calling_iterations": 3, "save_steps": 1000, "max_steps": 2}  # fmt: skip


def import_trl_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import trl"], check=True, cwd=ROOT)
    return time.perf_counter() - started


def start_worker() -> subprocess.Popen:
    from webapp.celery_app import app

    log = (DATA / "worker.log").open("wb")
    name = f"bench-first-step-{os.getpid()}@localhost"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu,default", "-c", "1", "-n", name,
         "--loglevel", "WARNING", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if app.control.ping(destination=[name], timeout=0.5):
            return proc
        if proc.poll() is not None:
            break
    proc.kill()
    sys.exit(f"the worker did not start: {(DATA / 'worker.log').read_text()[-2000:]}")


def standing_by() -> int:
    """How many standby processes (trainer and environment server) have finished importing so far."""
    logs = [*DATA.glob("logs/trainer-standby-*.log"), *DATA.glob("env-logs/server-standby-*.log")]
    return sum(path.read_text(errors="replace").count("standing by") for path in logs)


def settle(expected: int, timeout: float = 90) -> None:
    """A warm worker: wait until its standby trainer and server are ready (each run uses both and starts two more)."""
    deadline = time.monotonic() + timeout
    while standing_by() < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)


def first_step_seconds(team, version) -> float:
    from webapp.runs.models import FINAL_STATUSES, MetricPoint, Run
    from webapp.runs.services import run_create

    started = time.time()
    run = run_create(
        team=team,
        user=None,
        env_version=version,
        config=CONFIG,
        trust_override_reason="bench: our own built-in, its trust check runs elsewhere",
    )
    while not MetricPoint.objects.filter(run=run).exists():
        run.refresh_from_db()
        if run.status in FINAL_STATUSES:
            sys.exit(f"run {run.pk} ended {run.status} before its first step: {run.failure_reason}")
        time.sleep(0.02)
    took = time.time() - started
    run.refresh_from_db()
    phases = {
        "queued": run.provisioning_at.timestamp() - started,
        "provisioning": (run.running_at - run.provisioning_at).total_seconds(),
        "trainer to first step": took - (run.running_at.timestamp() - started),
    }
    from webapp.artifacts.layout import run_log

    log = run_log(run.pk).read_text(errors="replace")
    warm = "standby trainer" in log
    print("  " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()) + f" ({'standby' if warm else 'cold'}"
          " trainer)", file=sys.stderr)  # fmt: skip
    while Run.objects.get(pk=run.pk).status not in FINAL_STATUSES:  # one run at a time, as a warm worker sees them
        time.sleep(0.1)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="measured runs after the warm-up run")
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    if args.smoke:  # the warm-up run alone, measured
        args.runs = 0

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from webapp.accounts.models import Team
    from webapp.catalog.services import builtins_register
    from webapp.core.embedded_redis import ensure_running, stop
    from workers.models.tiny import ensure_tiny_model

    ensure_running(Path(settings.EMBEDDED_REDIS_SOCKET))
    call_command("migrate", verbosity=0)
    ensure_tiny_model(progress=lambda m, f: print(f"… {m}", file=sys.stderr))  # in the shared cache folder
    team = Team.objects.create(name="bench", slug="bench")
    version = next(v for v in builtins_register(team=team, user=None) if v.environment.slug == "guess-number")
    baseline = statistics.median(import_trl_seconds() for _ in range(1 if args.smoke else 3))
    if not args.smoke:  # for scale only: a smoke leaves it out
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from trl import GRPOTrainer"], check=True, cwd=ROOT)
        print(
            f"for scale: python -c 'from trl import GRPOTrainer' takes {time.perf_counter() - started:.2f} s "
            "(what a trainer started from nothing pays)",
            file=sys.stderr,
        )
    worker = start_worker()
    try:
        settle(2)
        warmup = first_step_seconds(team, version)
        print(f"warm-up run: {warmup:.2f} s to the first step", file=sys.stderr)
        times = []
        for i in range(args.runs):
            settle(2 * (i + 2))
            times.append(first_step_seconds(team, version))
            print(f"run {i + 1}: {times[-1]:.2f} s to the first step", file=sys.stderr)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
        stop(Path(settings.EMBEDDED_REDIS_SOCKET))
    print(f"baseline: python -c 'import trl' takes {baseline:.2f} s (median of 3)", file=sys.stderr)
    print(
        json.dumps(
            smoke_marked(
                {
                    "metric": "first_step_seconds",
                    "value": round(statistics.median(times or [warmup]), 2),
                    "unit": "s",
                    "goal": 5.0,
                    "baseline": round(baseline, 2),
                }
            )
        )
    )


if __name__ == "__main__":
    main()
