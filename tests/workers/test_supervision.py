"""Killed processes, as on a real host: a worker SIGKILLed with its trainer, a worker alone, an environment server.
Each run ends `failed` with its reason within 30 s while another worker is up (the session's live worker, on the
same host), and none of its processes remain. Real celery workers, the process provider, the tiny model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, subprocess_env
from tests.workers.conftest import process_alive, wait_final, wait_for
from tests.workers.test_training_runs import SMALL, deployment_pids
from webapp.runs.models import Episode, Status

pytestmark = [pytest.mark.slow, pytest.mark.lane_b, pytest.mark.django_db(transaction=True)]

DEADLINE = 30.0


@pytest.fixture
def victim_worker(django_db_blocker, settings):
    """A second worker that takes runs from its own queue, in its own process group, so that a test can kill it."""
    from webapp.celery_app import app

    queue = f"victim-{os.getpid()}"
    name = f"victim-{os.getpid()}@localhost"
    with django_db_blocker.unblock():
        env = subprocess_env()
    log_path = Path(settings.DATA_DIR) / "victim-worker.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", queue, "-c", "1", "-n", name,
             "--loglevel", "INFO", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    wait_for(lambda: app.control.ping(destination=[name], timeout=0.5), timeout=60, what="the victim worker")
    yield proc, queue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def start_on(queue: str, team, max_steps: int = 200):
    from tests.webapp.runs.conftest import register_builtin
    from webapp.celery_app import app
    from webapp.runs.services import run_create

    version = register_builtin(team, "guess-number")
    run = run_create(team=team, user=None, env_version=version, config={**SMALL, "max_steps": max_steps}, start=False)
    app.send_task("workers.execute_run", args=[run.pk], queue=queue)
    wait_for(lambda: Episode.objects.filter(run=run).exists(), timeout=600, what="the first episodes")
    run.refresh_from_db()
    return run


def ended_within(run, seconds: float):
    started = time.monotonic()
    run = wait_final(run, timeout=seconds)
    return run, time.monotonic() - started


def leftovers(run) -> list[int]:
    pids = [run.trainer_pid, *deployment_pids(run)]
    deadline = time.monotonic() + 5  # a process killed by its parent's death is gone a moment later
    while time.monotonic() < deadline and any(process_alive(p) for p in pids):
        time.sleep(0.2)
    return [p for p in pids if process_alive(p)]


def test_killing_the_worker_and_its_trainer_fails_the_run_quickly_and_leaves_nothing(
    acme, tiny_model, live_worker, victim_worker
):
    proc, queue = victim_worker
    run = start_on(queue, acme)
    os.killpg(proc.pid, signal.SIGKILL)  # the worker and its pool process
    os.killpg(run.trainer_pid, signal.SIGKILL)
    run, took = ended_within(run, DEADLINE)
    assert run.status == Status.FAILED and "worker process" in run.failure_reason and "died" in run.failure_reason
    assert leftovers(run) == [], f"still running after {took:.0f} s"


def test_a_worker_killed_alone_takes_its_trainer_and_servers_with_it(acme, tiny_model, live_worker, victim_worker):
    proc, queue = victim_worker
    run = start_on(queue, acme)
    assert process_alive(run.trainer_pid) and all(process_alive(p) for p in deployment_pids(run))
    os.killpg(proc.pid, signal.SIGKILL)  # the trainer is not signalled: it must not train on unsupervised
    assert wait_for(lambda: not process_alive(run.trainer_pid), timeout=5, what="the trainer to die with its worker")
    run, took = ended_within(run, DEADLINE)
    assert run.status == Status.FAILED and "worker process" in run.failure_reason
    assert leftovers(run) == [], f"still running after {took:.0f} s"


def test_a_killed_environment_server_fails_the_run_with_the_reason(acme, tiny_model, live_worker):
    from tests.workers.test_training_runs import start_run

    run = start_run(acme, max_steps=200)
    wait_for(lambda: Episode.objects.filter(run=run).exists(), timeout=600, what="the first episodes")
    run.refresh_from_db()
    os.kill(deployment_pids(run)[0], signal.SIGKILL)
    run, took = ended_within(run, DEADLINE)
    assert run.status == Status.FAILED
    assert "the environment died: replica 0: its server killed by signal SIGKILL" in run.failure_reason
    assert leftovers(run) == [], f"still running after {took:.0f} s"


def test_a_killed_worker_fails_its_evaluation_and_takes_the_evaluator_and_servers_with_it(
    acme, tiny_model, live_worker, victim_worker
):
    from tests.webapp.runs.conftest import register_builtin
    from webapp.celery_app import app
    from webapp.evals.models import EvalEpisode, EvalStatus
    from webapp.evals.services import evaluation_create

    proc, queue = victim_worker
    version = register_builtin(acme, "guess-number")
    evaluation = evaluation_create(team=acme, user=None, model_name="tiny-local", versions=[version], episodes=2000,
                                   max_turns=4, max_tokens=256, start=False)  # fmt: skip
    app.send_task("workers.execute_evaluation", args=[evaluation.pk], queue=queue)
    wait_for(lambda: EvalEpisode.objects.filter(evaluation=evaluation).exists(), timeout=600, what="a first episode")
    evaluation.refresh_from_db()
    pids = [evaluation.evaluator_pid, *[p for r in evaluation.deployment.values() for p in r.get("handles", [])]]
    assert all(process_alive(p) for p in pids)
    os.killpg(proc.pid, signal.SIGKILL)  # the evaluator is not signalled: it dies with its worker
    started = time.monotonic()
    wait_for(lambda: evaluation.refresh_from_db() or evaluation.status == EvalStatus.FAILED, timeout=DEADLINE,
             what="the evaluation to fail")  # fmt: skip
    assert "worker process" in evaluation.failure_reason, evaluation.failure_reason
    assert evaluation.episodes_done > 0, "what it recorded stays"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(process_alive(p) for p in pids):
        time.sleep(0.2)
    assert not [p for p in pids if process_alive(p)], f"left after {time.monotonic() - started:.0f} s"


def test_an_evaluation_whose_worker_provisions_slowly_on_a_loaded_machine_is_not_failed(
    acme, alice, tiny_model, live_worker, settings
):
    """Its worker is alive and busy: provisioning takes 40 s, the CPU is loaded, and beat's reaper (run here every
    two seconds, with a liveness window of 20 s) must not fail it; once it runs, a cancel ends it as cancelled."""
    from envs.providers.base import content_hash
    from tests.envs.conftest import FIXTURE_ENVS
    from tests.webapp.runs.conftest import register_builtin
    from webapp.evals.models import EvalStatus
    from webapp.evals.services import evaluation_cancel, evaluation_create
    from workers.worker.reaper import reap_lost

    settings.TRAINYARD_LOST_AFTER = 20
    slow = register_builtin(acme, "guess-number")
    slow.pk, slow.label = None, "slow-start"  # the same server and contract, which takes 40 s to start
    slow.source_kind, slow.source_ref = "folder", str(FIXTURE_ENVS / "slow_start")
    slow.pinned_ref = "sha256:" + content_hash(FIXTURE_ENVS / "slow_start")  # as adding the folder pins it
    slow.settings = {**slow.settings, "env": {"SLOW_START_SECONDS": "40"}}
    slow.save()
    evaluation = evaluation_create(team=acme, user=None, model_name="tiny-local", versions=[slow], episodes=400,
                                   max_turns=2, max_tokens=64)  # fmt: skip
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        wait_for(lambda: evaluation.refresh_from_db() or evaluation.status != EvalStatus.QUEUED, timeout=120,
                 what="the worker to take the evaluation")  # fmt: skip
        assert evaluation.status == EvalStatus.PROVISIONING, evaluation.failure_reason
        provisioning_since = time.monotonic()
        while evaluation.status == EvalStatus.PROVISIONING:
            reap_lost()
            evaluation.refresh_from_db()
            assert evaluation.status != EvalStatus.FAILED, evaluation.failure_reason
            time.sleep(2)
        assert time.monotonic() - provisioning_since > 25, "provisioning outlasted the liveness window"
    finally:
        for busy in load:
            busy.kill()
            busy.wait()
    assert evaluation.status == EvalStatus.RUNNING, evaluation.failure_reason
    evaluation_cancel(user=alice, evaluation=evaluation)
    wait_for(lambda: evaluation.refresh_from_db() or evaluation.status == EvalStatus.CANCELLED, timeout=60,
             what="the evaluation to stop")  # fmt: skip
