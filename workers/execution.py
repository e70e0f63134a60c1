"""One run's execution on a worker: provision, train in a subprocess, record the end, tear down, always."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from envs.contract import ContractUnreadable
from envs.providers import ProvisionError
from webapp.catalog.contracts import contract_drift, version_contract_hash
from webapp.catalog.deployments import provider_get, version_source
from webapp.live.publish import close_layer, publish
from webapp.runs.grpo import GRPOSettings
from webapp.runs.models import Run, Status
from webapp.runs.services import IllegalTransition, run_artifact_dir, run_fail, run_transition, sessions_needed
from workers.host_identity import process_identity
from workers.slot_keeper import SlotKeeper, lost_sessions_file
from workers.supervisor import Outcome, TrainerProcess, supervise

log = logging.getLogger(__name__)


def worker_host() -> str:
    return process_identity()


def failure_reason(run: Run, outcome: Outcome, trainer: TrainerProcess) -> str:
    written = run_artifact_dir(run) / "failure.txt"
    if written.exists():
        return written.read_text(errors="replace").split("\n\n", 1)[0][:2000]
    tail = trainer.log_tail(1500).strip().splitlines()[-8:]
    return outcome.reason + (": " + " | ".join(tail) if tail else "")


def execute_run(run_id: int) -> str:
    """Returns the final status. Safe to call twice for one run: only a queued run is started. The environment
    is torn down before the final status is written, so a finished run never leaves a server behind."""
    run = Run.objects.select_related("env_version__environment").filter(pk=run_id).first()
    if run is None:
        log.warning("run %s no longer exists; nothing to execute", run_id)
        return "gone"
    try:
        run_transition(run, Status.PROVISIONING, worker_host=worker_host(), heartbeat_at=timezone.now())
    except IllegalTransition:
        log.info("run %s is %s, not queued: not starting it again", run_id, run.status)
        return run.status
    provider = provider_get(run.provider)
    deployments: list = []
    try:
        final, reason = provision_and_train(run, provider, deployments)
    except Exception as exc:
        log.exception("run %s failed in the worker", run_id)
        final, reason = Status.FAILED, f"worker error: {type(exc).__name__}: {exc}"
    finally:
        deployments_teardown(deployments, provider, what=f"run {run_id}")
        if deployments:
            run.refresh_from_db()
            Run.objects.filter(pk=run.pk).update(deployment={**run.deployment, "torn_down": True})
    try:
        if final == Status.FAILED:
            return run_fail(run, reason).status
        return run_transition(run, final).status
    finally:
        close_layer()


def provision_version(run: Run, version, provider, replicas: int, deployments: list):
    """One environment version's servers for a run, checked against its pinned contract. Returns the deployment and
    its record, or the reason the run fails."""
    return version_provision(version, provider, replicas, deployments, labels={"run": str(run.pk)},
                             say=lambda line: publish(run.pk, [("run.log", {"line": line})]))  # fmt: skip


def version_provision(version, provider, replicas: int, deployments: list, *, labels: dict[str, str], say):
    """One environment version's servers (for a run or an evaluation), checked against its pinned contract."""
    source = version_source(version)
    say(f"provisioning {replicas} x {version} ({provider.kind})")
    try:
        deployment = provider.provision(source, replicas=replicas, labels=labels)
    except ProvisionError as exc:
        return None, None, f"the environment {version} did not start: {exc}"
    deployments.append(deployment)
    # The server must still be what the version pinned: an image or URL can change under a version.
    try:
        drift = contract_drift(version, deployment.endpoints[0], timeout=float(settings.TRAINYARD_ENV_STEP_TIMEOUT))
    except ContractUnreadable as exc:
        return None, None, f"the environment's contract could not be read, so it cannot be trusted to match: {exc}"
    if drift:
        return None, None, (f"the environment's server no longer matches {version} (its image or URL changed?): "
                            "a run would train against tools the version never had. What differs (pinned → now):\n"
                            + "\n".join(drift))[:2000]  # fmt: skip
    record = deployment.as_dict()
    record["handles"] = [getattr(h, "pid", h) for h in deployment.handles]
    # The tool surface this run trains against, to compare with what the model meets in production.
    record["contract_hash"] = version_contract_hash(version)
    record["tools"] = [t["name"] for t in version.tools]
    return deployment, record, ""


def provision_and_train(run: Run, provider, deployments: list) -> tuple[str, str]:
    """Provision, run the trainer to its end, and say how the run ended (the caller records it)."""
    from webapp.catalog.models import EnvironmentVersion

    version = run.env_version
    source = version_source(version)
    deployment, record, failure = provision_version(run, version, provider, run.replicas, deployments)
    if failure:
        return Status.FAILED, failure
    extra = {}  # a mixed run's other environments, by key
    for entry in run.environments[1:]:
        other = EnvironmentVersion.objects.select_related("environment").get(pk=entry["version"])
        other_provider = provider_get(entry.get("provider") or run.provider)
        _, other_record, failure = provision_version(run, other, other_provider, entry["replicas"], deployments)
        if failure:
            return Status.FAILED, failure
        extra[entry["key"]] = other_record
    if extra:
        record["environments"] = extra
    Run.objects.filter(pk=run.pk).update(deployment=record)
    run.refresh_from_db()
    if run.status == Status.CANCELLING:
        return Status.CANCELLED, ""
    run_transition(run, Status.RUNNING, heartbeat_at=timezone.now())
    processes = GRPOSettings.from_dict(run.config).processes
    trainer = TrainerProcess(run.pk, log_path=Path(run_artifact_dir(run)) / "trainer.log", processes=processes)
    Run.objects.filter(pk=run.pk).update(trainer_pid=trainer.pid)

    def cancel_requested() -> bool:
        return Run.objects.filter(pk=run.pk, status=Status.CANCELLING).exists()

    def heartbeat_age() -> float | None:
        beat = Run.objects.filter(pk=run.pk).values_list("heartbeat_at", flat=True).get()
        return (timezone.now() - beat).total_seconds() if beat else None

    def replicas_restarted(restarted) -> None:  # the reaper kills leftovers by these pids: keep them current
        handles = [getattr(h, "pid", h) for h in restarted.handles]
        Run.objects.filter(pk=run.pk).update(deployment={**record, "handles": handles})

    keeper = SlotKeeper(
        provider=provider, deployment=deployment, source=source, ledger=lost_sessions_file(run),
        needed_per_replica=-(-sessions_needed(GRPOSettings.from_dict(run.config)) // len(deployment.endpoints)),
        say=lambda line: publish(run.pk, [("run.log", {"line": line})]), restarted=replicas_restarted,
    )  # fmt: skip
    outcome = supervise(
        trainer,
        cancel_requested=cancel_requested,
        heartbeat_age=heartbeat_age,
        cooperative_grace=settings.TRAINYARD_CANCEL_GRACE,
        heartbeat_timeout=settings.TRAINYARD_HEARTBEAT_TIMEOUT,
        environment_dead=lambda: dead_replicas(provider, deployments),
        environment_upkeep=keeper,
    )
    run.refresh_from_db()
    if outcome.kind == "cancelled" or run.status == Status.CANCELLING:
        return Status.CANCELLED, ""
    if outcome.kind == "succeeded":
        return Status.SUCCEEDED, ""
    if outcome.reason.startswith("the environment died"):
        return Status.FAILED, outcome.reason[:2000]
    dead = dead_replicas(provider, deployments)
    if dead:  # the trainer failed because its environment died first: say that, then what the trainer saw
        return (
            Status.FAILED,
            f"the environment died: {'; '.join(dead)} (the trainer: {failure_reason(run, outcome, trainer)})"[:2000],
        )
    return Status.FAILED, failure_reason(run, outcome, trainer)


def deployments_teardown(deployments: list, provider, *, what: str) -> None:
    """Every environment a run or an evaluation started, torn down; a failure is logged, never raised (the others
    still go)."""
    for deployment in deployments:
        try:
            provider_of(deployment, provider).teardown(deployment)
        except Exception:
            log.exception("tearing down the environment of %s failed", what)


def provider_of(deployment, provider):
    """The provider that started this deployment (a mixed run's environments may use different ones)."""
    return provider if deployment.provider == provider.kind else provider_get(deployment.provider)


def dead_replicas(provider, deployments: list) -> list[str]:
    """Every dead server of every environment of the run (a mixed run has several deployments)."""
    dead = []
    for deployment in deployments:
        dead += provider_of(deployment, provider).dead_replicas(deployment)
    return dead
