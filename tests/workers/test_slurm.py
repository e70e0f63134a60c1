"""Runs on a real Slurm cluster: Debian's slurm-wlm, a controller and two node daemons on this machine
(../shared/notes/clusters-here.md), and the slurm queue's worker that submits runs with sbatch and follows them.

Both "nodes" are this machine, so each node's trainer is given its own folder (TRAINYARD_NODE_DIR): nothing may rely
on a folder another node or the login node can see; what the web reads comes from the artifact store. Needs root
(munge and the daemons) and the Slurm binaries; CI installs them and sets TRAINYARD_SLURM=required."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from tests.conftest import ROOT, subprocess_env
from tests.webapp.runs.conftest import register_builtin
from tests.workers.conftest import wait_final, wait_for
from webapp.artifacts.layout import run_log_key, stored_checkpoints
from webapp.artifacts.store import artifact_store
from webapp.celery_app import app
from webapp.runs.models import Episode, MetricPoint, Run, Status
from webapp.runs.services import run_create

pytestmark = [pytest.mark.slow, pytest.mark.lane_b, pytest.mark.django_db(transaction=True)]

SMALL = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 96, "temperature": 0.7,
         "max_tool_calling_iterations": 2, "learning_rate": 5e-5, "cluster": "slurm"}  # fmt: skip
BINARIES = ("slurmctld", "slurmd", "sbatch", "scontrol", "scancel", "munged")

CONF = """ClusterName=trainyard-test
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={node1_port}
AuthType=auth/munge
SlurmUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool-%n
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd-%n.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
KillWait=10
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={node1_port} CPUs=2 RealMemory=4000
NodeName=node2 NodeHostname=localhost NodeAddr=127.0.0.1 Port={node2_port} CPUs=2 RealMemory=4000
PartitionName=main Nodes=node1,node2 Default=YES MaxTime=INFINITE State=UP
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unavailable() -> str | None:
    missing = [name for name in BINARIES if shutil.which(name) is None]
    if missing:
        return f"Slurm is not installed here (no {', '.join(missing)}; apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "starting munge and Slurm's daemons needs root"
    return None


@pytest.fixture(scope="module")
def slurm_conf(tmp_path_factory):
    """A real two-node cluster for this module: munge, slurmctld, slurmd for node1 and node2; gone afterwards."""
    why = _unavailable()
    if why:
        if os.environ.get("TRAINYARD_SLURM") == "required":
            pytest.fail(f"TRAINYARD_SLURM=required, but {why}")
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("slurm")
    (folder / "state").mkdir()
    conf = folder / "slurm.conf"
    conf.write_text(CONF.format(dir=folder, ctld_port=free_port(), node1_port=free_port(), node2_port=free_port()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode != 0:
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["su", "-s", "/bin/sh", "munge", "-c", "/usr/sbin/munged"], check=True)
    subprocess.run(["slurmctld", "-f", str(conf)], check=True, env=env)
    for node in ("node1", "node2"):
        subprocess.run(["slurmd", "-f", str(conf), "-N", node], check=True, env=env)

    def idle() -> bool:
        out = subprocess.run(["sinfo", "-h", "-o", "%T %D"], capture_output=True, text=True, env=env).stdout
        return out.split() == ["idle", "2"]

    try:
        wait_for(idle, timeout=60, what="both Slurm nodes to be idle")
        yield conf
    finally:
        for pid_file in folder.glob("*.pid"):
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (ValueError, ProcessLookupError):
                pass


@pytest.fixture
def slurm_worker(slurm_conf, tmp_path, tiny_model):
    """The slurm queue's worker, as on a login node: it submits and follows; the nodes train."""
    name = f"slurm-{os.getpid()}@login"
    env = subprocess_env(SLURM_CONF=str(slurm_conf), TRAINYARD_NODE_DIR=str(tmp_path / "nodes"),
                         TRAINYARD_STANDBY="false", TRAINYARD_SLURM_POLL_SECONDS="1")  # fmt: skip
    with (tmp_path / "slurm-worker.log").open("wb") as log:
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "slurm", "-c", "4",
                                   "-n", name, "--without-gossip", "--without-mingle"], cwd=ROOT, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        wait_for(lambda: app.control.ping(destination=[name], timeout=0.5), timeout=60, what="the slurm worker")
        wait_for(lambda: _alive_on_slurm_queue(name), timeout=30, what="the slurm worker's heartbeat")
        yield tmp_path / "nodes"
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
        from webapp.fleet.models import Worker

        Worker.objects.filter(name=name).delete()


def _alive_on_slurm_queue(name: str) -> bool:
    from webapp.fleet.models import Worker

    # In Python: JSON containment is not on SQLite, the README's default database.
    rows = Worker.objects.filter(name=name).values_list("queues", flat=True)
    return any("slurm" in (queues or []) for queues in rows)


def said(run: Run) -> str:
    """What the slurm worker told the run's page (its live log lines, kept as the run's events)."""
    from webapp.live.models import RunEvent

    return "\n".join(e.payload.get("line", "") for e in RunEvent.objects.filter(run=run, type="run.log"))


def log_of(run: Run) -> str:
    return artifact_store().read_text(run_log_key(run.pk), "")


def test_a_two_node_run_a_cancel_a_time_limit_and_a_resume_on_a_real_slurm_cluster(
    acme, alice, client_for, slurm_worker
):
    version = register_builtin(acme, "guess-number")
    client = client_for(alice)

    # Side by side (each node has two cores; a job takes one a node): a run across both nodes, a run that outlives
    # its 1-minute limit, and one cancelled from its page after its first checkpoint.
    both = run_create(team=acme, user=alice, env_version=version,
                      config={**SMALL, "nodes": 2, "max_steps": 2, "save_steps": 2})  # fmt: skip
    too_long = run_create(team=acme, user=alice, env_version=version,
                          config={**SMALL, "max_steps": 10_000, "save_steps": 1, "slurm_time_minutes": 1})  # fmt: skip
    cancelled = run_create(team=acme, user=alice, env_version=version,
                           config={**SMALL, "max_steps": 8, "save_steps": 1})  # fmt: skip
    wait_for(lambda: stored_checkpoints(cancelled.pk), timeout=300, what="the first checkpoint in the store")
    response = client.post(reverse("runs:run-cancel", args=[cancelled.pk]))
    assert response.status_code in (200, 302)
    cancelled = wait_final(cancelled, timeout=120)
    assert cancelled.status == Status.CANCELLED, cancelled.failure_reason
    job = cancelled.slurm_job
    assert job["state"] == "CANCELLED" and job["nodes"], job
    assert f"Slurm: scancel {job['id']}" in said(cancelled)

    # Resumed: submitted again as a new job, it goes on from the store's checkpoint and finishes.
    response = client.post(reverse("runs:run-resume", args=[cancelled.pk]))
    assert response.status_code in (200, 302)
    resumed = wait_final(Run.objects.get(pk=cancelled.pk), timeout=400)
    assert resumed.status == Status.SUCCEEDED, resumed.failure_reason
    assert resumed.slurm_job["earlier"] == [job["id"]] and resumed.slurm_job["state"] == "COMPLETED"
    steps = sorted(set(MetricPoint.objects.filter(run=resumed, name="reward").values_list("step", flat=True)))
    assert steps == list(range(1, 9))
    assert "pulling checkpoint-" in log_of(resumed)
    assert f"Slurm: job {resumed.slurm_job['id']} RUNNING on node" in said(resumed)

    # The time limit: Slurm ends the job (TIMEOUT), and the run fails with that reason soon after.
    too_long = wait_final(too_long, timeout=240)
    assert too_long.status == Status.FAILED
    assert "reached its time limit (TIMEOUT" in too_long.failure_reason, too_long.failure_reason
    assert too_long.slurm_job["state"] == "TIMEOUT"

    # Two nodes x one process: torchrun across them, episodes recorded from both ranks, each node in its own folder.
    both = wait_final(both, timeout=400)
    assert both.status == Status.SUCCEEDED, (both.failure_reason, log_of(both)[-3000:])
    assert both.slurm_job["nodes"] == "node[1-2]"
    assert set(Episode.objects.filter(run=both).values_list("rank", flat=True)) == {0, 1}
    prefix = f"trainyard-slurm-{both.slurm_job['id']}-"
    folders = sorted(p.name for p in slurm_worker.iterdir() if p.name.startswith(prefix))
    assert folders == [prefix + "node0", prefix + "node1"]
    assert all((slurm_worker / f / "runs" / str(both.pk) / "trainer.log").exists() for f in folders)
    page = client.get(both.get_absolute_url()).content.decode()
    assert f"Slurm job {both.slurm_job['id']}" in page and "node[1-2]" in page
