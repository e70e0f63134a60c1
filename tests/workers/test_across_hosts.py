"""Two worker hosts that share nothing but PostgreSQL, Redis and the artifact store.

Host A is this test process with the session's worker (its data folder, its cache). Host B is a second `celery
worker` with a data folder and a cache of its own, in a pid namespace of its own where we are root (as in CI:
`unshare --pid --fork --mount-proc`), so that nothing on A can judge B's processes by their pids — as between two
machines. The store is a folder both see (what an NFS mount gives two machines); its S3 backend is tested in
tests/webapp/artifacts. A real `celery beat` reaps, as in a deployment.

The story: a folder environment is added on A and warm-started on A, then its folder is gone (B never had it); a
run trains on B from the warm start (B pulls the model and the folder's snapshot from the store); its final model
and log show on A's pages. A second run starts on B from that `run:ID/final`; B is killed mid-run; the run fails
from heartbeats alone within 30 s; resumed, it finishes on A from the checkpoint B left in the store, its step and
learning-rate schedule continuing.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tests.conftest import ROOT, subprocess_env
from tests.workers.conftest import wait_final, wait_for
from webapp.artifacts.layout import stored_checkpoints
from webapp.artifacts.model_names import warmstart_name
from webapp.catalog.services import environment_create
from webapp.celery_app import app
from webapp.runs.models import Episode, MetricPoint, Run, Status
from webapp.runs.services import run_create, run_resume
from workers.models.published import warm_start
from workers.worker.host_identity import host_identity

# Lane A (tests/lanes.sh): with the tiny model made before the lanes start (.ci/run), lane A ended 330 s before lane B.
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIXTURE_ENVS = Path(__file__).resolve().parents[1] / "fixtures" / "envs"
SMALL = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 128, "temperature": 0.7,
         "max_tool_calling_iterations": 3, "learning_rate": 5e-5}  # fmt: skip


@contextmanager
def gpu_queue_paused(names: list[str]):
    """The other workers stop taking runs (Celery's remote control) so that host B takes them; back afterwards."""
    for name in names:
        app.control.cancel_consumer("gpu", destination=[name], reply=True, timeout=5)
    try:
        yield
    finally:
        for name in names:
            app.control.add_consumer("gpu", destination=[name], reply=True, timeout=5)


def start_process(command: list[str], log_path: Path, env: dict) -> subprocess.Popen:
    with log_path.open("wb") as log:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip


def start_host_b(tmp_path: Path, name: str) -> tuple[subprocess.Popen, Path]:
    env = subprocess_env(
        TRAINYARD_DATA_DIR=str(tmp_path / "b-data"),
        TRAINYARD_CACHE_DIR=str(tmp_path / "b-cache"),
        TRAINYARD_ARTIFACTS=settings.ARTIFACTS_URL,
        DJANGO_SECRET_KEY=settings.SECRET_KEY,  # every host of a deployment agrees on it
        TRAINYARD_STANDBY="false",
    )
    command = [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu", "-c", "1", "-n", name,
               "--loglevel", "INFO", "--without-gossip", "--without-mingle"]  # fmt: skip
    if os.geteuid() == 0:  # a pid namespace of its own: its pids mean nothing on A
        command = ["unshare", "--pid", "--fork", "--mount-proc", *command]
    elif os.environ.get("TRAINYARD_DOCKER") == "required":
        pytest.fail("CI runs this as root, in a pid namespace of host B's own")
    (tmp_path / "b-data").mkdir()
    log_path = tmp_path / "b-data" / "worker.log"
    proc = start_process(command, log_path, env)
    wait_for(lambda: app.control.ping(destination=[name], timeout=0.5) or proc.poll() is not None, timeout=90,
             what="host B's worker to answer")  # fmt: skip
    assert proc.poll() is None, log_path.read_text()[-3000:]
    return proc, log_path


def log_of(client, run: Run) -> str:
    response = client.get(reverse("runs:run-log", args=[run.pk]))
    assert response.status_code == 200, response.content
    return response.content.decode()


@pytest.mark.timeout(1200)  # a warm start (~340 s beside the other lane) and three runs: 456 s in a CI run here
def test_a_second_host_trains_from_the_store_and_a_killed_host_s_run_resumes_on_the_first(
    acme, alice, client_for, tiny_model, live_worker, tmp_path
):
    # Host A adds a folder environment and warm-starts on it; then the folder is gone: B never had it.
    folder = tmp_path / "only-on-a" / "metadata_maze"
    shutil.copytree(FIXTURE_ENVS / "metadata_maze", folder, ignore=shutil.ignore_patterns("__pycache__"))
    version = environment_create(team=acme, user=None, name="metadata_maze", source_kind="folder",
                                 source_ref=str(folder)).versions.get()  # fmt: skip
    warm_start(version)
    shutil.rmtree(folder)

    beat = start_process([sys.executable, "-m", "celery", "-A", "workers", "beat", "-s", str(tmp_path / "beat"),
                          "--loglevel", "INFO"], tmp_path / "beat.log", subprocess_env())  # fmt: skip
    b_name = f"host-b-{os.getpid()}@elsewhere"
    others = [name for reply in app.control.ping(timeout=1) for name in reply]
    b = None
    try:
        with gpu_queue_paused(others):
            b, b_log = start_host_b(tmp_path, b_name)

            # 1. A run lands on B and succeeds there, from the warm start and the folder's snapshot.
            first = run_create(team=acme, user=None, env_version=version, model_name=warmstart_name(version),
                               config={**SMALL, "max_steps": 2, "save_steps": 2},
                               trust_override_reason="fixture: trust is tested elsewhere")  # fmt: skip
            first = wait_final(first, timeout=600)
            assert first.status == Status.SUCCEEDED, (first.failure_reason, b_log.read_text()[-3000:])
            b_host = first.worker_host.rsplit(":", 1)[0]
            assert b_host != host_identity(), "host B must be another host (its own pid namespace)"
            assert not (Path(settings.DATA_DIR) / "runs" / str(first.pk)).exists(), "A's disk holds nothing of it"
            assert list((tmp_path / "b-cache" / "env-sources" / "folders").iterdir()), "B ran the store's snapshot"
            answers = [
                t["content"] or "" for e in Episode.objects.filter(run=first) for t in e.turns if t["role"] == "tool"
            ]
            assert any("layout" in a for a in answers), "the observation's metadata must reach the model"

            # Its log and models show on A's pages, read from the store.
            client = client_for(alice)
            text = log_of(client, first)
            assert "pulling" in text and "from the artifact store" in text  # B pulled the warm start, built nothing
            response = client.get(reverse("runs:run-model-download", args=[first.pk, "final"]))
            assert response.status_code == 200
            with tarfile.open(fileobj=io.BytesIO(b"".join(response.streaming_content)), mode="r:gz") as tar:
                assert any(n.endswith("/model.safetensors") for n in tar.getnames())

            # 2. A second run on B starts from the first's final model; B dies after its first checkpoint.
            second = run_create(team=acme, user=None, env_version=version, model_name=f"run:{first.pk}/final",
                                config={**SMALL, "max_steps": 5, "save_steps": 2},
                                trust_override_reason="fixture: trust is tested elsewhere")  # fmt: skip
            wait_for(lambda: stored_checkpoints(second.pk), timeout=600, interval=0.3,
                     what="B's first checkpoint in the store")  # fmt: skip
            second.refresh_from_db()
            assert second.status == Status.RUNNING, second.status
            os.killpg(b.pid, signal.SIGKILL)  # the worker, its trainer and its servers: the whole "machine"
            killed_at = time.monotonic()
            b.wait(timeout=10)
            second = wait_final(second, timeout=60)
            failed_after = time.monotonic() - killed_at
            assert second.status == Status.FAILED and "worker lost" in second.failure_reason, second.failure_reason
            assert failed_after <= 30, f"failed {failed_after:.0f} s after its host died"

        # 3. Resumed, it finishes on A from B's checkpoint in the store: steps 3 to 5, the schedule continuing.
        second = run_resume(run=second, user=None)
        assert second.resume_from == "checkpoint-2"
        second = wait_final(second, timeout=600)
        assert second.status == Status.SUCCEEDED, second.failure_reason
        assert second.worker_host.rsplit(":", 1)[0] == host_identity()
        assert "pulling checkpoint-2 from the artifact store" in log_of(client, second)
        steps = sorted(MetricPoint.objects.filter(run=second, name="reward").values_list("step", flat=True))
        assert steps == [1, 2, 3, 4, 5]
        rates = dict(MetricPoint.objects.filter(run=second, name="learning_rate").values_list("step", "value"))
        assert rates[3] < rates[1], rates  # linear decay continued from step 2; a fresh schedule would restart
        assert {m.name for m in saved_models_of(second)} >= {"final", "checkpoint-4"}
    finally:
        if b is not None and b.poll() is None:
            os.killpg(b.pid, signal.SIGKILL)
        beat.terminate()
        beat.wait(timeout=20)
        from webapp.fleet.models import Worker

        Worker.objects.filter(name=b_name).delete()


def saved_models_of(run: Run):
    from webapp.artifacts.saved_models import saved_models

    return saved_models(run)
