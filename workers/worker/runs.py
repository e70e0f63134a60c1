"""A run's part in the one life cycle (workers/worker/execution.py): its environments (its own version and a mixed
run's others), its trainer (`workers.training.trainer`, or a standby one), and how a trainer's end becomes the run's.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils import timezone

from webapp.artifacts.layout import run_failure_file, run_log, run_log_key, run_lost_sessions_file
from webapp.catalog.deployments import version_source
from webapp.catalog.models import EnvironmentVersion
from webapp.live.publish import publish
from webapp.runs.grpo import GRPOSettings
from webapp.runs.models import Run, Status
from webapp.runs.services import IllegalTransition, run_fail, run_transition
from webapp.runs.spec import sessions_needed
from workers.worker.execution import CANCELLED, FAILED, SUCCEEDED, Execution
from workers.worker.provisioning import Wanted, dead_replicas, versions_provision
from workers.worker.published_log import PublishedLog
from workers.worker.slot_keeper import SlotKeeper
from workers.worker.standby import standby_take
from workers.worker.supervision import Outcome, SupervisedProcess, supervise

log = logging.getLogger(__name__)

TRAINER = "workers.training.trainer"


class RunExecution(Execution):
    def __init__(self, run_id: int) -> None:
        super().__init__(run_id)
        self.run: Run | None = None
        self.record: dict = {}
        self.keeper: SlotKeeper | None = None
        self.log = PublishedLog(run_log(run_id), run_log_key(run_id))

    @property
    def what(self) -> str:
        return f"run {self.pk}"

    def say(self, line: str) -> None:
        publish(self.pk, [("run.log", {"line": line})])

    def claim(self, worker: str) -> bool:
        self.run = Run.objects.select_related("env_version__environment").filter(pk=self.pk).first()
        if self.run is None:
            return False
        try:
            run_transition(self.run, Status.PROVISIONING, worker_host=worker, heartbeat_at=timezone.now())
        except IllegalTransition:
            return False
        return True

    def status(self) -> str:
        return Run.objects.filter(pk=self.pk).values_list("status", flat=True).first() or "gone"

    def beat(self) -> None:
        Run.objects.filter(pk=self.pk, status=Status.PROVISIONING).update(heartbeat_at=timezone.now())

    def provision(self) -> str:
        run = self.run
        wanted = [Wanted(key="", version=run.env_version, provider=run.provider, replicas=run.replicas)]
        for entry in run.environments[1:]:  # a mixed run's other environments
            version = EnvironmentVersion.objects.select_related("environment").get(pk=entry["version"])
            wanted.append(Wanted(key=entry["key"], version=version, provider=entry.get("provider") or run.provider,
                                 replicas=entry["replicas"]))  # fmt: skip
        records, failure = versions_provision(wanted, self.deployments, self.providers,
                                              labels={"run": str(run.pk)}, say=self.say)  # fmt: skip
        if failure:
            return failure
        self.record = records.pop("")
        if records:
            self.record["environments"] = records
        Run.objects.filter(pk=run.pk).update(deployment=self.record)
        return ""

    def start(self) -> bool:
        try:
            run_transition(self.run, Status.RUNNING, heartbeat_at=timezone.now())
        except IllegalTransition:  # cancelling (or cancelled) while its servers started
            return False
        return True

    def spawn(self) -> SupervisedProcess:
        run = self.run
        processes = GRPOSettings.from_dict(run.config).processes
        run_log(run.pk).parent.mkdir(parents=True, exist_ok=True)  # before a standby trainer opens its log there
        self.log.pull()
        spare = standby_take(run.pk, run_log(run.pk)) if processes == 1 else None
        process = SupervisedProcess(TRAINER, run.pk, log_path=run_log(run.pk), processes=processes, spare=spare)
        Run.objects.filter(pk=run.pk).update(trainer_pid=process.pid)
        return process

    def publish(self) -> None:
        self.log.publish()

    def supervise(self, process: SupervisedProcess) -> Outcome:
        run = self.run
        deployment = self.deployments[0]

        def cancel_requested() -> bool:
            return Run.objects.filter(pk=run.pk, status=Status.CANCELLING).exists()

        def heartbeat_age() -> float | None:  # the trainer beats (rank 0): a hung trainer is stopped
            beat = Run.objects.filter(pk=run.pk).values_list("heartbeat_at", flat=True).get()
            return (timezone.now() - beat).total_seconds() if beat else None

        def replicas_restarted(restarted) -> None:  # the reaper kills leftovers by these pids: keep them current
            handles = [getattr(h, "pid", h) for h in restarted.handles]
            Run.objects.filter(pk=run.pk).update(deployment={**self.record, "handles": handles})

        self.keeper = SlotKeeper(
            provider=self.providers[deployment.provider], deployment=deployment, source=version_source(run.env_version),
            ledger=run_lost_sessions_file(run.pk),
            needed_per_replica=-(-sessions_needed(GRPOSettings.from_dict(run.config)) // len(deployment.endpoints)),
            say=self.say, restarted=replicas_restarted,
        )  # fmt: skip
        return supervise(
            process,
            cancel_requested=cancel_requested,
            heartbeat_age=heartbeat_age,
            cooperative_grace=settings.TRAINYARD_CANCEL_GRACE,
            heartbeat_timeout=settings.TRAINYARD_HEARTBEAT_TIMEOUT,
            environment_dead=lambda: dead_replicas(self.deployments, self.providers),
            environment_upkeep=self.keeper,
        )

    def verdict(self, outcome: Outcome, process: SupervisedProcess) -> tuple[str, str]:
        self.run.refresh_from_db()
        if outcome.kind == "cancelled" or self.run.status == Status.CANCELLING:
            return CANCELLED, ""
        if outcome.kind == "succeeded":
            return SUCCEEDED, ""
        if outcome.reason.startswith("the environment died"):
            return FAILED, outcome.reason[:2000]
        dead = dead_replicas(self.deployments, self.providers)
        if dead:  # the trainer failed because its environment died first: say that, then what the trainer saw
            return FAILED, f"the environment died: {'; '.join(dead)} (the trainer: {self.failure(outcome, process)})"
        return FAILED, self.failure(outcome, process)

    def failure(self, outcome: Outcome, process: SupervisedProcess) -> str:
        """The trainer's own account (failure.txt) if it wrote one, else how it ended and its log's last lines."""
        written = run_failure_file(self.pk)
        if written.exists():
            return written.read_text(errors="replace").split("\n\n", 1)[0][:2000]
        tail = process.log_tail(1500).strip().splitlines()[-8:]
        return (outcome.reason + (": " + " | ".join(tail) if tail else ""))[:2000]

    def torn_down(self) -> None:
        record = Run.objects.filter(pk=self.pk).values_list("deployment", flat=True).first() or {}
        Run.objects.filter(pk=self.pk).update(deployment={**record, "torn_down": True})

    def finish(self, final: str, reason: str) -> str:
        if final == FAILED:
            return run_fail(self.run, reason).status
        try:
            return run_transition(self.run, final).status
        except IllegalTransition:  # it ended meanwhile (the reaper, a cancel of a queued copy)
            self.run.refresh_from_db()
            return self.run.status
