"""The provider interface. A Kubernetes provider would implement the same three calls with a Deployment whose
endpoints are Service URLs and whose handles are pod names."""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx

SourceKind = Literal["folder", "image", "url"]


class ProvisionError(Exception):
    """The environment could not be brought up; the message says why in its first line (the server's real cause
    when its log has one), then quotes the log's end. `log` is where the whole log is, when there is a file."""

    def __init__(self, message: str, *, cause: str = "", log: str = "") -> None:
        super().__init__(message)
        self.cause = cause
        self.log = log


@dataclass(frozen=True)
class EnvSource:
    """Where an environment version comes from. `folder` is an OpenEnv folder (openenv.yaml, server/app.py)."""

    kind: SourceKind
    reference: str
    capacity: int = 64  # sessions one replica accepts (MAX_CONCURRENT_ENVS and OPENENV_MAX_SESSIONS)
    env: dict[str, str] = field(default_factory=dict)  # the version's settings for its server
    python: str | None = None  # an interpreter with the environment's own dependencies (envs.dependencies)
    requirements: tuple[str, ...] = ()  # those dependencies, for providers that install them themselves (docker)
    mounts: tuple[str, ...] = ()  # host folders the server reads (data assets): read-only, at the same path inside

    def server_env(self, port: int | None = None) -> dict[str, str]:
        """Variables every server we start gets: OpenEnv's own capacity variable (which upstream servers read),
        ours (which our built-in servers read), then the version's settings, which may override neither.

        With the port the server listens on, `PORT` says it and `{port}` in a setting becomes it: a server that calls
        its own HTTP API under another name (OpenEnv's calendar reads `API_PORT`) is given `API_PORT={port}`."""
        capacity = str(self.capacity)
        values = dict(self.env)
        if port is not None:
            values = {key: value.replace("{port}", str(port)) for key, value in values.items()}
            values["PORT"] = str(port)
        return {**values, "MAX_CONCURRENT_ENVS": capacity, "OPENENV_MAX_SESSIONS": capacity}

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

    def dead_replicas(self, deployment: Deployment) -> list[str]:
        """Replicas whose server has ended, each as "replica N: how it ended" (cheap: no request to the server)."""
        ...

    def restart_replica(self, deployment: Deployment, index: int, source: EnvSource) -> None:
        """Restart one replica in place (same endpoint); ProvisionError when it cannot come back."""
        ...

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
    log_path: str = "",
    log_all: Callable[[], str] | None = None,
) -> None:
    """Wait for GET /health; fail at once, naming the cause and quoting the log, when `died()` says it is gone."""
    log_link = f" (whole log: {log_path})" if log_path else ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reason = died()
        if reason:
            tail = log_tail()
            cause = failure_cause(log_all() if log_all else tail)
            headline = f"{what} {reason} before it was healthy" + (f": {cause}" if cause else "")
            raise ProvisionError(f"{headline}{log_link}; its log ends with:\n{tail}", cause=cause, log=log_path)
        if is_healthy(endpoint, timeout=1.0):
            return
        time.sleep(poll)
    tail = log_tail()
    raise ProvisionError(f"{what} was not healthy at {endpoint} within {timeout:g} s{log_link}; its log ends with:\n"
                         f"{tail}", cause=failure_cause(log_all() if log_all else tail), log=log_path)  # fmt: skip


def content_hash(folder: Path, *extra: str) -> str:
    """A hash of every file under an environment folder (and any extra strings), for caching images."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    for item in extra:
        digest.update(item.encode())
    return digest.hexdigest()


EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception|Exit|Interrupt)):\s?(.*)$")
MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
# Modules an OpenEnv server's import fallbacks try after the real import failed (`from models import ...`).
FALLBACK_MODULES = {"models", "server", "core", "envs", "openenv_core", "client"}
# Modules whose PyPI package has another name (what OpenEnv's environments import most).
KNOWN_PACKAGES = {"pyspiel": "open_spiel", "cv2": "opencv-python", "PIL": "pillow", "yaml": "pyyaml",
                  "sklearn": "scikit-learn", "gym": "gym", "ale_py": "ale-py", "bs4": "beautifulsoup4"}  # fmt: skip


def failure_cause(log: str) -> str:
    """The one line of a server's log that says why it died: its last exception, except that a missing module
    that is the server's own import fallback (`No module named 'models'`) gives way to the missing module that
    started the chain (`No module named 'pyspiel'`)."""
    lines = log.splitlines()
    exceptions = [(i, m) for i, line in enumerate(lines) if (m := EXCEPTION_LINE.match(line.strip()))]
    if not exceptions:
        return ""
    index, last = exceptions[-1]
    if not last.group(2).strip():  # the message is on the lines below (NLTK's LookupError)
        below = [line.strip(" *") for line in lines[index + 1 : index + 8]]
        message = " ".join(line for line in below if line and not line.startswith(">>>"))[:300]
        hint = ""
        if "NLTK Downloader" in message:
            resource = re.search(r"Resource '?([\w./-]+)'? not found", message)
            hint = (f" (the server downloads NLTK data at start, and no PyPI package ships NLTK's "
                    f"{resource.group(1) if resource else 'data'!r}; set NLTK_DATA, a server setting, to a folder on "
                    f"the worker that holds it)")  # fmt: skip
        return f"{last.group(1)}: {message}{hint}"
    exceptions = [m for _, m in exceptions]
    missing = [(m, MISSING_MODULE.search(m.group(2))) for m in exceptions]
    real = [(m, found) for m, found in missing if found and found.group(1).split(".")[0] not in FALLBACK_MODULES]
    if MISSING_MODULE.search(last.group(2)) and real:
        m, found = real[-1]
        module = found.group(1).split(".")[0]
        package = KNOWN_PACKAGES.get(module)
        hint = f"add the PyPI package {package!r}" if package else f"add the package that provides {module!r}"
        return f"{m.group(1)}: {m.group(2)} ({hint} to the version's requirements)"
    return f"{last.group(1)}: {last.group(2)}".strip()[:500]
