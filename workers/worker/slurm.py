"""A run handed to a Slurm cluster: the worker of the `slurm` queue (on a login node; no GPU needed) provisions the
run's environments as any worker does, submits the run with `sbatch` (workers/worker/slurm_script.py), and follows
the job until it ends: its id, state, Slurm's reason and node list on the run; a cancel is `scancel`; a job that
ends badly (time limit, node failure, preemption, out of memory, cancelled outside Trainyard) fails its run with
Slurm's own word for it. On the nodes, `workers.training.slurm_node` runs the trainer; logs, checkpoints and the
final model reach the store from there, so a resume — submitted again like the first time — starts from the last
checkpoint whichever node wrote it.

While its job lives in Slurm (pending or running) this worker keeps the run's heartbeat: Slurm, not a trainer's
silence, says when a job is lost (NODE_FAIL), and a job's time limit bounds a trainer that hangs.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from webapp.artifacts.layout import run_dir, run_failure_key, run_log_key
from webapp.artifacts.store import artifact_store
from webapp.runs.models import Run, Status
from workers.worker.execution import CANCELLED, FAILED, SUCCEEDED
from workers.worker.provisioning import dead_replicas
from workers.worker.runs import RunExecution
from workers.worker.slurm_script import JobResources, job_script
from workers.worker.supervision import Outcome

log = logging.getLogger(__name__)

# https://slurm.schedmd.com/job_state_codes.html: the states a job ends in, and what each means for a run.
ENDED = {
    "COMPLETED": "completed",
    "FAILED": "failed (a task exited with an error)",
    "CANCELLED": "was cancelled",
    "TIMEOUT": "reached its time limit",
    "NODE_FAIL": "lost a node (node failure)",
    "PREEMPTED": "was preempted",
    "OUT_OF_MEMORY": "ran out of memory",
    "BOOT_FAIL": "could not boot a node",
    "DEADLINE": "missed its deadline",
}
KEY_VALUE = re.compile(r"(\w[\w/:]*)=(\S*)")


class SlurmError(RuntimeError):
    """sbatch or scontrol said no; the message is Slurm's."""


def for_slurm(run_id: int) -> bool:
    config = Run.objects.filter(pk=run_id).values_list("config", flat=True).first() or {}
    return config.get("cluster") == "slurm"


@dataclass
class SlurmJob:
    """The job that stands where a local run has its trainer process."""

    id: str
    script: Path
    output: Path
    pid: int | None = None  # no process of this host: nothing for the reaper to kill here


def job_environment() -> dict[str, str]:
    """What the job inherits (sbatch's --export=ALL): this worker's environment, with the deployment's shared
    settings made explicit — a node works in a folder of its own, so nothing may default to this host's data folder
    (the store, a SQLite database, the demo secret). Given to sbatch's process, never written into the script."""
    return {**os.environ, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL,
            "TRAINYARD_ARTIFACTS": settings.ARTIFACTS_URL, "DJANGO_SECRET_KEY": settings.SECRET_KEY}  # fmt: skip


def sbatch(script: Path) -> str:
    """Submit; the job id."""
    if shutil.which("sbatch") is None:
        raise SlurmError("this worker has no sbatch: start the slurm queue's worker on a host of the cluster")
    done = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True, timeout=60,
                          env=job_environment())  # fmt: skip
    if done.returncode != 0:
        raise SlurmError(f"sbatch refused the job: {(done.stderr or done.stdout).strip()[:1000]}")
    return done.stdout.strip().split(";")[0]


def job_info(job_id: str) -> dict[str, str] | None:
    """`scontrol show job`'s fields of the job; None when Slurm no longer knows it."""
    done = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        if "Invalid job id" in done.stderr:
            return None
        raise SlurmError(f"scontrol show job {job_id}: {done.stderr.strip()[:500]}")
    return dict(KEY_VALUE.findall(done.stdout))


def scancel(job_id: str) -> None:
    subprocess.run(["scancel", job_id], capture_output=True, text=True, timeout=30)


class SlurmRunExecution(RunExecution):
    def __init__(self, run_id: int) -> None:
        super().__init__(run_id)
        self.ended: dict[str, str] = {}
        self.cancel_sent = False

    def spawn(self) -> SlurmJob:  # type: ignore[override]  (a job, not a process)
        run = self.run
        folder = run_dir(run.pk)
        folder.mkdir(parents=True, exist_ok=True)
        script, output = folder / "slurm-job.sh", folder / "slurm-output.txt"
        script.write_text(job_script(run.pk, run.config, output=output))
        store = artifact_store()
        if store.exists(run_failure_key(run.pk)):  # an earlier attempt's account is not this one's
            store.delete(run_failure_key(run.pk))
        job_id = sbatch(script)
        resources = JobResources.of(run.config)
        earlier = Run.objects.filter(pk=run.pk).values_list("slurm_job", flat=True).get() or {}
        before = [*earlier.get("earlier", []), earlier["id"]] if earlier.get("id") else []  # a resume's first jobs
        self.job_record({"id": job_id, "state": "PENDING", "reason": "", "nodes": "", "earlier": before,
                         "submitted_at": timezone.now().isoformat(), "time_minutes": resources.time_minutes,
                         "nodes_asked": resources.nodes})  # fmt: skip
        self.say(f"Slurm: submitted as job {job_id} ({resources.nodes} node{'s' if resources.nodes > 1 else ''} x "
                 f"{resources.processes_per_node} process{'es' if resources.processes_per_node > 1 else ''}, "
                 f"{resources.time_minutes} min)")  # fmt: skip
        return SlurmJob(job_id, script, output)

    def job_record(self, record: dict) -> None:
        Run.objects.filter(pk=self.pk).update(slurm_job=record)

    def publish(self) -> None:
        """Nothing: each node copies its own log to the store (workers.training.slurm_node)."""

    def supervise(self, process: SlurmJob) -> Outcome:  # type: ignore[override]
        seen: tuple = ()
        while True:
            info = job_info(process.id)
            if info is None:
                return Outcome("failed", f"Slurm no longer knows job {process.id} (purged before it was seen ending)")
            state = info.get("JobState", "UNKNOWN")
            reason = "" if info.get("Reason") in (None, "None") else info["Reason"]
            nodes = "" if info.get("NodeList") in (None, "(null)") else info["NodeList"]
            if (state, reason, nodes) != seen:
                seen = (state, reason, nodes)
                record = Run.objects.filter(pk=self.pk).values_list("slurm_job", flat=True).get()
                self.job_record({**record, "state": state, "reason": reason, "nodes": nodes,
                                 "exit_code": info.get("ExitCode", "")})  # fmt: skip
                self.say(f"Slurm: job {process.id} {state}" + (f" ({reason})" if reason else "")
                         + (f" on {nodes}" if nodes else ""))  # fmt: skip
            if state in ENDED:
                self.ended = info
                return self._outcome(process.id, state, info)
            Run.objects.filter(pk=self.pk, status__in=(Status.RUNNING, Status.CANCELLING)).update(
                heartbeat_at=timezone.now()
            )
            if not self.cancel_sent and Run.objects.filter(pk=self.pk, status=Status.CANCELLING).exists():
                self.say(f"Slurm: scancel {process.id}")
                scancel(process.id)
                self.cancel_sent = True
            dead = dead_replicas(self.deployments, self.providers)
            if dead and not self.cancel_sent:
                scancel(process.id)
                self.cancel_sent = True
                return Outcome("failed", f"the environment died: {'; '.join(dead)} (its Slurm job was cancelled)")
            time.sleep(settings.TRAINYARD_SLURM_POLL_SECONDS)

    def _outcome(self, job_id: str, state: str, info: dict[str, str]) -> Outcome:
        if state == "COMPLETED":
            return Outcome("succeeded")
        if state == "CANCELLED" and self.cancel_sent:
            return Outcome("cancelled")
        if state == "CANCELLED":
            return Outcome("failed", f"Slurm job {job_id} was cancelled outside Trainyard (scancel, or the cluster's "
                                     "administrators); resume submits it again")  # fmt: skip
        if state == "FAILED":
            return Outcome("failed", f"Slurm job {job_id} failed (exit code {info.get('ExitCode', '?')})")
        return Outcome("failed", f"Slurm job {job_id} {ENDED[state]} ({state}"
                                 + (f", {info['TimeLimit']}" if state == "TIMEOUT" and info.get("TimeLimit") else "")
                                 + "); resume goes on from the last checkpoint")  # fmt: skip

    def verdict(self, outcome: Outcome, process: SlurmJob) -> tuple[str, str]:  # type: ignore[override]
        self.run.refresh_from_db()
        if outcome.kind == "cancelled" or self.run.status == Status.CANCELLING:
            return CANCELLED, ""
        if outcome.kind == "succeeded":
            return SUCCEEDED, ""
        if self.ended.get("JobState") == "FAILED":  # the trainer's own account, else its log's last lines
            store = artifact_store()
            if store.exists(run_failure_key(self.pk)):
                account = store.read_bytes(run_failure_key(self.pk)).decode(errors="replace").split("\n\n", 1)[0]
                return FAILED, f"{outcome.reason}: {account}"[:2000]
            size = store.size(run_log_key(self.pk)) or 0
            tail = store.read_bytes(run_log_key(self.pk), start=max(0, size - 1500)).decode(errors="replace")
            lines = tail.strip().splitlines()[-8:]
            return FAILED, (outcome.reason + (": " + " | ".join(lines) if lines else ""))[:2000]
        return FAILED, outcome.reason[:2000]
