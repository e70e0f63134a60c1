"""An evaluation's part in the one life cycle (workers/worker/execution.py): its versions' servers (sized for the
episodes it plays at once), its evaluator (`workers.training.evaluator`), and how the evaluator's end becomes the
evaluation's. The worker's supervision loop beats for it while the evaluator runs."""

from __future__ import annotations

import time

from django.conf import settings
from django.utils import timezone

from webapp.artifacts.layout import evaluation_failure_file, evaluation_log, evaluation_log_key
from webapp.catalog.deployments import provider_for_version
from webapp.catalog.models import EnvironmentVersion
from webapp.evals.models import EvalStatus, Evaluation
from webapp.evals.services import evaluation_move
from workers.worker.execution import CANCELLED, FAILED, SUCCEEDED, Execution
from workers.worker.provisioning import Wanted, dead_replicas, versions_provision
from workers.worker.published_log import PublishedLog
from workers.worker.supervision import Outcome, SupervisedProcess, supervise

EVALUATOR = "workers.training.evaluator"


def eval_batch(evaluation: Evaluation) -> int:
    """Samples generated at once: up to TRAINYARD_EVAL_BATCH, whole episodes (a multiple of k)."""
    k = evaluation.k
    return max(k, min(settings.TRAINYARD_EVAL_BATCH, evaluation.episodes_total) // k * k)


class EvaluationExecution(Execution):
    def __init__(self, evaluation_id: int) -> None:
        super().__init__(evaluation_id)
        self.evaluation: Evaluation | None = None
        self.log = PublishedLog(evaluation_log(evaluation_id), evaluation_log_key(evaluation_id))

    @property
    def what(self) -> str:
        return f"evaluation {self.pk}"

    def say(self, line: str) -> None:
        with evaluation_log(self.pk).open("a") as out:
            out.write(line + "\n")

    def claim(self, worker: str) -> bool:
        if not Evaluation.objects.filter(pk=self.pk).exists():
            return False
        if not evaluation_move(self.pk, EvalStatus.PROVISIONING, worker_host=worker, heartbeat_at=timezone.now()):
            return False
        self.evaluation = Evaluation.objects.select_related("team").get(pk=self.pk)
        evaluation_log(self.pk).parent.mkdir(parents=True, exist_ok=True)
        return True

    def publish(self) -> None:
        self.log.publish()

    def status(self) -> str:
        return Evaluation.objects.filter(pk=self.pk).values_list("status", flat=True).first() or "gone"

    def beat(self) -> None:
        Evaluation.objects.filter(pk=self.pk, status=EvalStatus.PROVISIONING).update(heartbeat_at=timezone.now())

    def provision(self) -> str:
        evaluation = self.evaluation
        sessions = eval_batch(evaluation)
        versions = EnvironmentVersion.objects.select_related("environment").in_bulk(
            [entry["version"] for entry in evaluation.versions]
        )
        wanted = [
            Wanted(key=entry["key"], version=versions[entry["version"]],
                   provider=provider_for_version(versions[entry["version"]], evaluation.provider),
                   replicas=-(-sessions // versions[entry["version"]].effective_capacity))
            for entry in evaluation.versions
        ]  # fmt: skip
        records, failure = versions_provision(wanted, self.deployments, self.providers,
                                              labels={"evaluation": str(evaluation.pk)}, say=self.say)  # fmt: skip
        if failure:
            return failure
        Evaluation.objects.filter(pk=evaluation.pk).update(deployment=records)
        return ""

    def start(self) -> bool:
        # cancelled while its servers started: not running
        return evaluation_move(self.pk, EvalStatus.RUNNING, only_from=(EvalStatus.PROVISIONING,),
                               heartbeat_at=timezone.now())  # fmt: skip

    def spawn(self) -> SupervisedProcess:
        process = SupervisedProcess(EVALUATOR, self.pk, log_path=evaluation_log(self.pk))
        Evaluation.objects.filter(pk=self.pk).update(evaluator_pid=process.pid)
        return process

    def cancel_requested(self) -> bool:
        return Evaluation.objects.filter(pk=self.pk, status=EvalStatus.CANCELLING).exists()

    def supervise(self, process: SupervisedProcess) -> Outcome:
        beaten = [0.0]

        def heartbeat_age() -> None:  # the worker beats for it: the reaper fails it if this loop (the worker) dies
            if time.monotonic() - beaten[0] > settings.TRAINYARD_WORKER_BEAT:
                beaten[0] = time.monotonic()
                Evaluation.objects.filter(pk=self.pk).update(heartbeat_at=timezone.now())

        return supervise(
            process, cancel_requested=self.cancel_requested, heartbeat_age=heartbeat_age, cooperative_grace=0.0,
            kill_grace=5.0, environment_dead=lambda: dead_replicas(self.deployments, self.providers),
        )  # fmt: skip

    def verdict(self, outcome: Outcome, process: SupervisedProcess) -> tuple[str, str]:
        if outcome.kind == "cancelled" or self.cancel_requested():
            return CANCELLED, ""
        if outcome.kind == "succeeded":
            return SUCCEEDED, ""
        written = evaluation_failure_file(self.pk)
        if written.exists():
            return FAILED, written.read_text(errors="replace").split("\n\n", 1)[0][:2000]
        tail = process.log_tail(1500).strip().splitlines()[-6:]
        return FAILED, (outcome.reason + (": " + " | ".join(tail) if tail else ""))[:2000]

    def finish(self, final: str, reason: str) -> str:
        # SUCCEEDED is the evaluator's to record (with the aggregates); the other ends are the worker's.
        if final == SUCCEEDED and self.status() in (EvalStatus.RUNNING, EvalStatus.CANCELLING):
            final, reason = FAILED, "the evaluator ended without recording its results"
        if final == FAILED:
            evaluation_move(self.pk, EvalStatus.FAILED, reason=reason)
        elif final == CANCELLED:
            evaluation_move(self.pk, EvalStatus.CANCELLED)
        return self.status()
