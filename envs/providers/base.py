"""The provider interface. A Kubernetes provider would implement the same three calls with a Deployment whose
endpoints are Service URLs and whose handles are pod names."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx

SourceKind = Literal["folder", "image", "url"]


class ProvisionError(Exception):
    """The environment could not be brought up; the message says why, quoting the server's log when there is one."""


@dataclass(frozen=True)
class EnvSource:
    """Where an environment version comes from. `folder` is an OpenEnv folder (openenv.yaml, server/app.py)."""

    kind: SourceKind
    reference: str
    capacity: int = 64  # sessions one replica accepts (OPENENV_MAX_SESSIONS for the servers we start)

    @property
    def folder(self) -> Path:
        if self.kind != "folder":
            raise ValueError(f"a {self.kind} source has no folder")
        return Path(self.reference)

    @property
    def package(self) -> str:
        return self.folder.name


@dataclass
class Deployment:
    provider: str
    deployment_id: str
    endpoints: list[str]
    capacity_per_replica: int
    handles: list[Any] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def capacity(self) -> int:
        return self.capacity_per_replica * len(self.endpoints)

    @classmethod
    def new(cls, provider: str, source: EnvSource, labels: dict[str, str] | None) -> Deployment:
        return cls(provider=provider, deployment_id=new_deployment_id(), endpoints=[],
                   capacity_per_replica=source.capacity, labels=dict(labels or {}))  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "deployment_id": self.deployment_id,
            "endpoints": self.endpoints,
            "capacity_per_replica": self.capacity_per_replica,
            "labels": self.labels,
        }


class Provider(Protocol):
    kind: str

    def provision(
        self, source: EnvSource, *, replicas: int = 1, labels: dict[str, str] | None = None
    ) -> Deployment: ...

    def health(self, deployment: Deployment) -> list[bool]: ...

    def teardown(self, deployment: Deployment) -> None: ...


def start_replicas(
    deployment: Deployment,
    replicas: int,
    *,
    start: Callable[[int], tuple[Any, str]],
    wait: Callable[[Any, str], None],
    teardown: Callable[[Deployment], None],
) -> Deployment:
    """Start every replica, then wait for each to be healthy; on any failure tear down whatever started."""
    try:
        for index in range(replicas):
            handle, endpoint = start(index)
            deployment.handles.append(handle)
            deployment.endpoints.append(endpoint)
        for handle, endpoint in zip(deployment.handles, deployment.endpoints, strict=True):
            wait(handle, endpoint)
    except BaseException:
        teardown(deployment)
        raise
    return deployment


def new_deployment_id() -> str:
    return uuid.uuid4().hex[:12]


def is_healthy(endpoint: str, *, timeout: float = 2.0) -> bool:
    try:
        response = httpx.get(endpoint.rstrip("/") + "/health", timeout=timeout)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def wait_healthy(
    endpoint: str,
    *,
    timeout: float,
    died: Callable[[], str | None],
    log_tail: Callable[[], str],
    what: str,
    poll: float = 0.1,
) -> None:
    """Wait for GET /health; fail at once, quoting the log, when `died()` says the server is gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reason = died()
        if reason:
            raise ProvisionError(f"{what} {reason} before it was healthy; its log ends with:\n{log_tail()}")
        if is_healthy(endpoint, timeout=1.0):
            return
        time.sleep(poll)
    raise ProvisionError(f"{what} was not healthy at {endpoint} within {timeout:g} s; its log ends with:\n{log_tail()}")


def content_hash(folder: Path, *extra: str) -> str:
    """A hash of every file under an environment folder (and any extra strings), for caching images."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    for item in extra:
        digest.update(item.encode())
    return digest.hexdigest()
