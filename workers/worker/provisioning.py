"""Environment servers for work on this worker (a run, an evaluation): each version's replicas started by its
provider and checked against the contract the version pinned; every server torn down at the end, always."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from envs.contract import ContractUnreadable
from envs.providers import ProvisionError
from webapp.catalog.contracts import contract_drift, version_contract_hash
from webapp.catalog.deployments import provider_get, version_source

log = logging.getLogger(__name__)


class Providers(dict):
    """The providers one piece of work uses, each made once (a Docker provider holds a client to its engine)."""

    def __missing__(self, kind: str):
        self[kind] = provider_get(kind)
        return self[kind]


@dataclass(frozen=True)
class Wanted:
    """One environment version a piece of work needs: its key in the work, its provider and how many replicas."""

    key: str
    version: Any
    provider: str
    replicas: int


def version_provision(wanted: Wanted, deployments: list, providers: Providers, *, labels: dict[str, str],
                      say: Callable[[str], None]) -> tuple[Any, dict[str, Any] | None, str]:  # fmt: skip
    """One version's servers, checked against its pinned contract: (deployment, its record, "") or the reason the
    work fails. A deployment that started is appended to `deployments` at once, so it is torn down whatever
    happens next."""
    version = wanted.version
    source = version_source(version)
    say(f"provisioning {wanted.replicas} x {version} ({wanted.provider})")
    try:
        deployment = providers[wanted.provider].provision(source, replicas=wanted.replicas, labels=labels)
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
    # The tool surface this work runs against, to compare with what the model meets in production.
    record["contract_hash"] = version_contract_hash(version)
    record["tools"] = [t["name"] for t in version.tools]
    return deployment, record, ""


def versions_provision(wanted: list[Wanted], deployments: list, providers: Providers, *, labels: dict[str, str],
                       say: Callable[[str], None]) -> tuple[dict[str, dict[str, Any]], str]:  # fmt: skip
    """Every version's servers in turn: (records by key, "") or ({}, the reason the first one failed)."""
    records = {}
    for one in wanted:
        _, record, failure = version_provision(one, deployments, providers, labels=labels, say=say)
        if failure:
            return {}, failure
        records[one.key] = record
    return records, ""


def deployments_teardown(deployments: list, providers: Providers, *, what: str) -> None:
    """Every environment a piece of work started, torn down; a failure is logged, never raised (the others still
    go)."""
    for deployment in deployments:
        try:
            providers[deployment.provider].teardown(deployment)
        except Exception:
            log.exception("tearing down the environment of %s failed", what)


def dead_replicas(deployments: list, providers: Providers) -> list[str]:
    """Every dead server of every environment of the work (a mixed run has several deployments)."""
    dead = []
    for deployment in deployments:
        dead += providers[deployment.provider].dead_replicas(deployment)
    return dead
