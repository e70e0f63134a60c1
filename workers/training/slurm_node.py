"""One node's part of a run on a Slurm cluster: `srun` starts `python -m workers.training.slurm_node RUN_ID` once on
each node of the job (workers/worker/slurm_script.py renders the script).

Each node works in a folder of its own (`TRAINYARD_DATA_DIR`, node-local: nothing relies on a folder another node
or the login node can see) and starts the run's trainer ranks under torchrun, joined across the nodes by a c10d
rendezvous on the job's first node. What other hosts read goes to the artifact store: checkpoints and the final
model (the trainer publishes them), and this node's trainer log, copied every few seconds (node 0's is the run's
log) together with the trainer's own account of a failure. Metrics and episodes are recorded as on any worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

RENDEZVOUS_PORT_BASE = 29400


def node_folder(job_id: str, node: int) -> Path:
    """This node's own folder for this job: `TRAINYARD_NODE_DIR` if the template sets one (a node's local scratch),
    else the system's temporary folder."""
    base = os.environ.get("TRAINYARD_NODE_DIR") or tempfile.gettempdir()
    return Path(base) / f"trainyard-slurm-{job_id}-node{node}"


def trainer_command(run_id: int, *, nodes: int, node: int, processes: int, head: str, job_id: str) -> list[str]:
    """The trainer alone on a one-process job; else its ranks under torchrun, `processes` per node."""
    module = ["--module", "workers.training.trainer", str(run_id)]
    if nodes == 1 and processes == 1:
        return [sys.executable, "-m", "workers.training.trainer", str(run_id)]
    port = RENDEZVOUS_PORT_BASE + int(job_id) % 500
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes), "--node-rank", str(node),
            "--nproc-per-node", str(processes), "--rdzv-backend", "c10d", "--rdzv-id", f"trainyard-{job_id}",
            "--rdzv-endpoint", f"{head}:{port}", *module]  # fmt: skip


def main(run_id: int) -> int:
    job_id = os.environ["SLURM_JOB_ID"]
    node = int(os.environ.get("SLURM_NODEID", "0"))
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or "1")
    folder = node_folder(job_id, node)
    os.environ["TRAINYARD_DATA_DIR"] = str(folder)
    import django

    django.setup()
    from django.conf import settings

    from webapp.artifacts.layout import run_failure_file, run_failure_key, run_log, run_log_key, run_node_log_key
    from webapp.artifacts.store import artifact_store
    from webapp.runs.grpo import GRPOSettings
    from webapp.runs.models import Run
    from workers.worker.published_log import PublishedLog

    run = Run.objects.get(pk=run_id)
    processes = GRPOSettings.from_dict(run.config).processes
    head = os.environ.get("TRAINYARD_RENDEZVOUS_HOST") or "127.0.0.1"
    local_log = run_log(run_id)
    local_log.parent.mkdir(parents=True, exist_ok=True)
    log = PublishedLog(local_log, run_log_key(run_id) if node == 0 else run_node_log_key(run_id, node))
    if node == 0:
        log.pull()  # a resumed run keeps one log
    with local_log.open("ab") as out:
        out.write(f"[slurm] job {job_id}, node {node} of {nodes} ({os.uname().nodename}), folder {folder}\n".encode())
        out.flush()
        command = trainer_command(run_id, nodes=nodes, node=node, processes=processes, head=head, job_id=job_id)
        trainer = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    stop = threading.Event()

    def publish_loop() -> None:
        while not stop.wait(settings.TRAINYARD_PUBLISH_SECONDS):
            try:
                log.publish()
            except Exception as exc:  # an unreachable store must not stop training; the last publish tries again
                print(f"[slurm] could not publish the log: {exc}", file=sys.stderr)

    threading.Thread(target=publish_loop, daemon=True).start()
    # scancel, a time limit, a preemption: Slurm sends SIGTERM (then SIGKILL after KillWait); the trainer is told
    # too (it stops after its step), and what it logged until then still reaches the store.
    signal.signal(signal.SIGTERM, lambda *_: trainer.send_signal(signal.SIGTERM))
    code = trainer.wait()
    stop.set()
    failure, store = run_failure_file(run_id), artifact_store()
    if failure.exists() and not store.exists(run_failure_key(run_id)):  # the first node to know why says it
        store.write_bytes(run_failure_key(run_id), failure.read_bytes())
    with local_log.open("ab") as out:
        out.write(f"[slurm] node {node}: the trainer exited with {code}\n".encode())
    log.publish()
    return code


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
