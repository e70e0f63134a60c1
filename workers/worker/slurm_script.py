"""A run's Slurm job script, rendered from a template: the queue's defaults (TRAINYARD_SLURM_* settings) under the
run's own resources (its `nodes`, `gpus` and `processes` per node, `slurm_*` settings).

A template of one's own (TRAINYARD_SLURM_TEMPLATE, a file) may use these placeholders, each written `@@name`:
`directives` (the `#SBATCH` lines), `setup` (TRAINYARD_SLURM_SETUP), `repo` (this checkout), `python` (this
interpreter), `run_id`, `command` (the `srun` line that starts one `workers.training.slurm_node` per node). The job
inherits the submitting worker's environment (sbatch's default), so compute nodes see the same database, Redis and
artifact store settings.
"""

from __future__ import annotations

import shlex
import string
import sys
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from webapp.runs.grpo import GRPOSettings

REPO_ROOT = Path(__file__).resolve().parents[2]

DEFAULT_TEMPLATE = """#!/bin/bash
# A Trainyard run on Slurm: rendered by workers/worker/slurm_script.py (TRAINYARD_SLURM_TEMPLATE replaces it).
@@directives
set -eo pipefail
cd @@repo
@@setup
# torchrun's c10d rendezvous lives on the job's first node, at the address Slurm knows it by.
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export TRAINYARD_RENDEZVOUS_HOST=$(scontrol show node "$first" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')
@@command
"""


class JobTemplate(string.Template):
    delimiter = "@@"


@dataclass(frozen=True)
class JobResources:
    """What the job asks Slurm for: the run's settings over the queue's defaults."""

    nodes: int
    processes_per_node: int
    gpus_per_node: int
    cpus_per_task: int
    mem_gb: int
    time_minutes: int
    partition: str
    account: str
    qos: str

    @classmethod
    def of(cls, config: dict) -> JobResources:
        run = GRPOSettings.from_dict(config)
        return cls(
            nodes=run.nodes, processes_per_node=run.processes, gpus_per_node=run.gpus,
            cpus_per_task=run.slurm_cpus_per_task or settings.TRAINYARD_SLURM_CPUS_PER_TASK,
            mem_gb=run.slurm_mem_gb or settings.TRAINYARD_SLURM_MEM_GB,
            time_minutes=run.slurm_time_minutes or settings.TRAINYARD_SLURM_TIME_MINUTES,
            partition=run.slurm_partition or settings.TRAINYARD_SLURM_PARTITION,
            account=run.slurm_account or settings.TRAINYARD_SLURM_ACCOUNT,
            qos=run.slurm_qos or settings.TRAINYARD_SLURM_QOS,
        )  # fmt: skip


def directives(run_id: int, resources: JobResources, output: Path) -> list[str]:
    lines = [f"--job-name=trainyard-run-{run_id}", f"--nodes={resources.nodes}", "--ntasks-per-node=1",
             f"--time={resources.time_minutes}", f"--output={output}", "--open-mode=append"]  # fmt: skip
    if resources.cpus_per_task:
        lines.append(f"--cpus-per-task={resources.cpus_per_task}")
    if resources.mem_gb:
        lines.append(f"--mem={resources.mem_gb}G")
    if resources.gpus_per_node:
        lines.append(f"--gres=gpu:{resources.gpus_per_node}")
    for name in ("partition", "account", "qos"):
        if getattr(resources, name):
            lines.append(f"--{name}={getattr(resources, name)}")
    return [f"#SBATCH {line}" for line in lines]


def job_script(run_id: int, config: dict, *, output: Path) -> str:
    """The script sbatch takes for this run (its stdout and stderr go to `output`, on the submitting host)."""
    resources = JobResources.of(config)
    template = DEFAULT_TEMPLATE
    if settings.TRAINYARD_SLURM_TEMPLATE:
        template = Path(settings.TRAINYARD_SLURM_TEMPLATE).expanduser().read_text()
    python = shlex.quote(sys.executable)
    command = (f"srun --ntasks-per-node=1 --kill-on-bad-exit=1 {python} -m workers.training.slurm_node "
               f"{run_id}")  # fmt: skip
    return JobTemplate(template).substitute(
        directives="\n".join(directives(run_id, resources, output)), setup=settings.TRAINYARD_SLURM_SETUP,
        repo=shlex.quote(str(REPO_ROOT)), python=python, run_id=str(run_id), command=command,
    )  # fmt: skip
