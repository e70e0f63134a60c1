"""Trust checks of catalog versions: provision the version, run the probes (envs.trust), store a TrustReport."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from envs.providers import ProvisionError
from envs.tools import ToolSpec
from envs.trust.load_profile import load_profile
from envs.trust.openenv_validator import openenv_validation
from envs.trust.probes import ProbeContext, run_probes
from webapp.catalog.deployments import default_provider_kind, provider_get, version_source
from webapp.catalog.models import EnvironmentVersion, TrustReport
from webapp.core.work_queue import WorkKind, work_queue

# The capacity probe opens one session more than the declared maximum; probing a larger one is not worth it.
PROBE_CAPACITY_LIMIT = 64


def trust_report_latest(version: EnvironmentVersion) -> TrustReport | None:
    return version.trust_reports.order_by("-created_at").first()


FINISHED = (TrustReport.State.DONE, TrustReport.State.ERROR)


def trust_gate(version: EnvironmentVersion) -> str | None:
    """Why a run on this version needs a recorded reason, or None when it does not.

    Only the latest *finished* report counts: a re-check that is pending or running does not lift a failure, and
    a check that errored could not judge, so it does not count as passed either. A version never checked (trust
    checks on add turned off) has nothing to go by and is not held back."""
    reports = list(version.trust_reports.order_by("-created_at")[:50])
    if not reports:
        return None
    finished = next((r for r in reports if r.state in FINISHED), None)
    if finished is not None and finished.verdict == "passed":
        return None
    if finished is not None and finished.state == TrustReport.State.ERROR:
        return f"{version}'s last trust check could not finish ({finished.error[:200] or 'no detail'})"
    if finished is not None:
        names = ", ".join(r["name"] for r in finished.failed)
        waiting = " (a re-check is under way)" if reports[0].state not in FINISHED else ""
        return f"{version} failed trust probes ({names}){waiting}"
    return f"{version}'s trust check is still {reports[0].state}; wait for it to pass"


def trust_check_under_way(version: EnvironmentVersion) -> bool:
    report = trust_report_latest(version)
    return report is not None and report.state not in FINISHED


def trust_check_request(*, version: EnvironmentVersion) -> TrustReport:
    """Record a pending report and queue the check once the transaction commits (a broker that is down loses
    nothing: the report stays pending and is queued when a worker is ready)."""
    report = TrustReport.objects.create(version=version)
    work_queue("trust check", report.pk)
    return report


TRUST_CHECK_WORK = WorkKind(
    name="trust check", task="workers.run_trust_check", queue="default",
    stranded=lambda cutoff: TrustReport.objects.filter(state=TrustReport.State.PENDING, task_id="",
                                                       created_at__lt=cutoff).values_list("pk", flat=True),
    sent=lambda pk, task_id: TrustReport.objects.filter(pk=pk).update(task_id=task_id),
)  # fmt: skip


def trust_check_run(
    *,
    report: TrustReport,
    provider_kind: str | None = None,
    progress: Callable[[str], None] = lambda m: None,
    load: bool = False,
) -> TrustReport:
    """Provision the version, run the probes and OpenEnv's validator, store the report; with `load`, also measure
    its load profile on the same deployment and store it on the version."""
    version = report.version
    TrustReport.objects.filter(pk=report.pk).update(state=TrustReport.State.RUNNING)
    kind = provider_kind or default_provider_kind(version.source_kind)
    provider = provider_get(kind, progress=progress)
    capacity = min(version.effective_capacity, PROBE_CAPACITY_LIMIT)
    source = version_source(version, capacity=capacity)
    try:
        deployment = provider.provision(source, labels={"purpose": "trust"})
    except ProvisionError as exc:
        report.state, report.error, report.finished_at = TrustReport.State.ERROR, str(exc)[:4000], timezone.now()
        report.save()
        return report
    try:
        ctx = ProbeContext(
            endpoint=deployment.endpoints[0],
            tools=[ToolSpec.from_dict(t) for t in version.tools],
            capacity=version.effective_capacity if kind == "url" else capacity,
            step_timeout=float(settings.TRAINYARD_ENV_STEP_TIMEOUT),
            observation_schema=version.observation_schema,
            stochastic=bool(version.server_metadata.get("stochastic")),
            seeding=version.seeding,
        )
        results = run_probes(ctx, progress=lambda name, i, n: progress(f"probe {i + 1}/{n}: {name}"))
        progress("OpenEnv's validator")
        folder = Path(source.reference) if source.kind == "folder" else None
        report.openenv_validation = openenv_validation(deployment.endpoints[0], folder)
        if load:
            rows = load_profile(deployment.endpoints[0], ctx.tools, capacity=ctx.capacity, timeout=ctx.step_timeout,
                                progress=lambda n: progress(f"load profile: {n} sessions"))  # fmt: skip
            EnvironmentVersion.objects.filter(pk=version.pk).update(
                load_profile={"measured_at": timezone.now().isoformat(), "provider": kind, "levels": rows}
            )
    except Exception as exc:
        report.state, report.error, report.finished_at = (
            TrustReport.State.ERROR,
            f"{type(exc).__name__}: {exc}",
            timezone.now(),
        )
        report.save()
        return report
    finally:
        provider.teardown(deployment)
    report.results = [r.as_dict() for r in results]
    report.state = TrustReport.State.DONE
    report.finished_at = timezone.now()
    report.save()
    return report
