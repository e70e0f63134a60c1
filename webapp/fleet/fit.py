"""Can the live fleet run this? A run's GPU count and generation backend against what the live workers on the run
queue declared in their heartbeats. Checked when a run is created, so a run no worker can take is refused with the
reason instead of waiting in the queue forever."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from webapp.fleet.models import Worker
from webapp.fleet.selectors import workers_alive

RUN_QUEUE = "gpu"
SLURM_QUEUE = "slurm"  # a worker on a Slurm login node hands these runs to the cluster (workers/worker/slurm.py)


def _offers(worker: Worker) -> str:
    caps = worker.capabilities or {}
    gpus = f"{len(worker.gpus)} GPU{'s' if len(worker.gpus) != 1 else ''}" if worker.gpus else "no GPU"
    cuda = "CUDA" if caps.get("cuda") else "no CUDA"
    vllm = f"vllm {caps['vllm']}" if caps.get("vllm") else "no vllm package"
    return f"{worker.name}: {gpus}, {cuda}, {vllm}"


def vllm_missing(worker: Worker) -> str | None:
    """Why this worker cannot generate with vLLM, or None when it can."""
    caps = worker.capabilities or {}
    reasons = [] if caps.get("cuda") else ["no CUDA device"]
    if not caps.get("vllm"):
        reasons.append("the vllm package is not installed")
    return " and ".join(reasons) or None


def fleet_fit_check(*, gpus: int, generation_backend: str, cluster: str = "") -> None:
    """Refuse (a field error with the reason) a run that no live worker on the run queue can take. A run for the
    Slurm cluster needs a live worker on the Slurm queue; the cluster, not the fleet, has its GPUs."""
    if cluster == "slurm":
        if not any(SLURM_QUEUE in (w.queues or []) for w in workers_alive()):
            raise ValidationError({"cluster": "no worker is alive on the slurm queue now: start one on the "
                                              "cluster's login node (`celery -A workers worker -Q slurm`, README: "
                                              "Slurm)."})  # fmt: skip
        return
    vllm = generation_backend.startswith("vllm")
    if not gpus and not vllm:
        return
    workers = [w for w in workers_alive() if RUN_QUEUE in (w.queues or [])]
    if not workers:
        field = "gpus" if gpus else "generation_backend"
        wanted = "the GPUs" if gpus else "vLLM"
        raise ValidationError({field: f"no worker is alive on the run queue now, so none offers {wanted}; start one "
                                      "(make demo starts one)."})  # fmt: skip
    if gpus and not any(len(w.gpus or []) >= gpus for w in workers):
        raise ValidationError({"gpus": f"no live worker offers {gpus} GPU{'s' if gpus > 1 else ''}: "
                                       + "; ".join(_offers(w) for w in workers)})  # fmt: skip
    if vllm:
        able = [w for w in workers if vllm_missing(w) is None and len(w.gpus or []) >= gpus]
        if not able:
            reasons = "; ".join(f"{w.name}: {vllm_missing(w) or 'too few GPUs'}" for w in workers)
            raise ValidationError({"generation_backend": f"vLLM generation needs a worker with CUDA and the vllm "
                                                         f"package; no live worker has both ({reasons}). Use hf or "
                                                         "continuous_batching here."})  # fmt: skip
