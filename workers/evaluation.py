"""One evaluation's execution on a worker: provision its versions, run the evaluator subprocess to its end, record
how it ended, tear down, always. The evaluator's heartbeat is its recorded episodes (and this loop's beat)."""

from __future__ import annotations

import logging
import time

from django.utils import timezone

from webapp.catalog.deployments import provider_get
from webapp.evals.models import EvalStatus, Evaluation
from webapp.evals.services import evaluation_fail
from workers.execution import deployments_teardown, version_provision, worker_host
from workers.supervisor import TrainerProcess, supervise

log = logging.getLogger(__name__)


def evaluation_log(evaluation_id: int):
    from workers.evaluator import evaluation_dir

    return evaluation_dir(evaluation_id) / "evaluator.log"


def execute_evaluation(evaluation_id: int) -> str:
    """Returns the final status; only a queued evaluation is started (a task delivered twice runs it once)."""
    started = Evaluation.objects.filter(pk=evaluation_id, status=EvalStatus.QUEUED).update(
        status=EvalStatus.PROVISIONING, started_at=timezone.now(), heartbeat_at=timezone.now(),
        worker_host=worker_host(),
    )  # fmt: skip
    if not started:
        return Evaluation.objects.filter(pk=evaluation_id).values_list("status", flat=True).first() or "gone"
    evaluation = Evaluation.objects.select_related("team").get(pk=evaluation_id)
    path = evaluation_log(evaluation_id)
    path.parent.mkdir(parents=True, exist_ok=True)

    def say(line: str) -> None:
        with path.open("a") as out:
            out.write(line + "\n")

    provider = provider_get(evaluation.provider)
    deployments: list = []
    try:
        final, reason = provision_and_evaluate(evaluation, provider, deployments, say)
    except Exception as exc:
        log.exception("evaluation %s failed in the worker", evaluation_id)
        final, reason = EvalStatus.FAILED, f"worker error: {type(exc).__name__}: {exc}"
    finally:
        deployments_teardown(deployments, provider, what=f"evaluation {evaluation_id}")
    if final == EvalStatus.FAILED:
        evaluation_fail(evaluation_id, reason)
    elif final == EvalStatus.CANCELLED:
        Evaluation.objects.filter(pk=evaluation_id).update(status=EvalStatus.CANCELLED, finished_at=timezone.now())
    return final


def provision_and_evaluate(evaluation: Evaluation, provider, deployments: list, say) -> tuple[str, str]:
    from webapp.catalog.models import EnvironmentVersion
    from workers.evaluator import eval_batch, evaluation_dir

    sessions = eval_batch(evaluation)
    record: dict = {}
    for entry in evaluation.versions:
        version = EnvironmentVersion.objects.select_related("environment").get(pk=entry["version"])
        replicas = -(-sessions // version.effective_capacity)
        _, version_record, failure = version_provision(
            version, provider_get(provider_for(version, evaluation.provider)), replicas, deployments,
            labels={"evaluation": str(evaluation.pk)}, say=say,
        )  # fmt: skip
        if failure:
            return EvalStatus.FAILED, failure
        record[entry["key"]] = version_record
    Evaluation.objects.filter(pk=evaluation.pk).update(deployment=record)
    moved = Evaluation.objects.filter(pk=evaluation.pk, status=EvalStatus.PROVISIONING).update(
        status=EvalStatus.RUNNING, heartbeat_at=timezone.now()
    )
    if not moved:  # cancelled while its servers started
        return EvalStatus.CANCELLED, ""
    process = TrainerProcess(evaluation.pk, log_path=evaluation_log(evaluation.pk), module="workers.evaluator")
    Evaluation.objects.filter(pk=evaluation.pk).update(evaluator_pid=process.pid)

    def cancel_requested() -> bool:
        return Evaluation.objects.filter(pk=evaluation.pk, status=EvalStatus.CANCELLING).exists()

    beaten = [0.0]

    def heartbeat_age() -> None:  # the worker beats for it: the reaper fails it if this loop (the worker) dies
        if time.monotonic() - beaten[0] > 5:
            beaten[0] = time.monotonic()
            Evaluation.objects.filter(pk=evaluation.pk).update(heartbeat_at=timezone.now())

    from workers.execution import dead_replicas

    outcome = supervise(
        process, cancel_requested=cancel_requested, heartbeat_age=heartbeat_age, cooperative_grace=0.0,
        kill_grace=5.0, environment_dead=lambda: dead_replicas(provider, deployments),
    )  # fmt: skip
    if outcome.kind == "cancelled" or cancel_requested():
        return EvalStatus.CANCELLED, ""
    if outcome.kind == "succeeded":
        return EvalStatus.SUCCEEDED, ""
    written = evaluation_dir(evaluation.pk) / "failure.txt"
    if written.exists():
        return EvalStatus.FAILED, written.read_text(errors="replace").split("\n\n", 1)[0][:2000]
    tail = process.log_tail(1500).strip().splitlines()[-6:]
    return EvalStatus.FAILED, (outcome.reason + (": " + " | ".join(tail) if tail else ""))[:2000]


def provider_for(version, wanted: str) -> str:
    from webapp.runs.services import provider_for_version

    return provider_for_version(version, wanted)
