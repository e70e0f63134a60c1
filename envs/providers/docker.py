"""Environment servers as locked-down Docker containers (docker SDK).

Images of environment folders are built on a configurable base and cached by a hash of the folder's content and
the base image, so each version is built once per engine. Containers run with a read-only root (a small tmpfs
for /tmp), a non-root user, every capability dropped, no-new-privileges, memory/CPU/pids limits, and no egress:
by default they sit on an internal bridge network that reaches nothing outside; where only host networking works
(network="host") egress cannot be cut and the endpoint binds to 127.0.0.1 only.
"""

from __future__ import annotations

import shlex
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from envs.providers.base import (
    Deployment,
    EnvSource,
    ProvisionError,
    content_hash,
    is_healthy,
    start_replicas,
    wait_healthy,
)

LABEL_MANAGED = "trainyard.managed"
LABEL_DEPLOYMENT = "trainyard.deployment"
LABEL_PREFIX = "trainyard."
INTERNAL_NETWORK = "trainyard-envs"
CONTAINER_PORT = 8000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DockerProvider:
    kind = "docker"

    def __init__(
        self,
        *,
        base_image: str = "python:3.11-slim",
        network: str = INTERNAL_NETWORK,
        memory: str = "1g",
        cpus: float = 1.0,
        pids_limit: int = 256,
        start_timeout: float = 180.0,
        build_timeout: float = 1800.0,
        client: docker.DockerClient | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client or docker.from_env(timeout=int(build_timeout))
        self.base_image = base_image
        self.network = network
        self.memory = memory
        self.cpus = cpus
        self.pids_limit = pids_limit
        self.start_timeout = start_timeout
        self.progress = progress or (lambda message: None)

    # -- images ---------------------------------------------------------------------------------------------
    def resolve_base_image(self) -> str:
        if self.base_image == "local":
            from envs.providers.base_image import local_base_image

            return local_base_image(self.client, progress=self.progress)
        return self.base_image

    def image_for(self, source: EnvSource) -> str:
        if source.kind == "image":
            try:
                self.client.images.get(source.reference)
            except docker.errors.ImageNotFound:
                try:
                    self.progress(f"pulling {source.reference}")
                    self.client.images.pull(source.reference)
                except docker.errors.APIError as exc:
                    raise ProvisionError(f"image {source.reference!r} is not here and cannot be pulled: {exc}") from exc
            return source.reference
        if source.kind != "folder":
            raise ProvisionError(f"the docker provider runs images or environment folders, not a {source.kind} source")
        own = source.folder / "Dockerfile"
        base = self.resolve_base_image()
        try:
            base_id = self.client.images.get(base).id
        except docker.errors.ImageNotFound:
            base_id = base  # the build will pull it (or fail with a clear message)
        # A folder without a Dockerfile of its own at the top (OpenEnv's keep theirs in server/, FROM an image of
        # their registry) gets ours: the same server-only runtime as the built-ins, plus its own requirements.
        dockerfile = None if own.exists() else generated_dockerfile(source.package, list(source.requirements))
        digest = content_hash(source.folder, base_id, dockerfile or "", *source.requirements)
        tag = f"trainyard-env/{source.package.replace('_', '-')}:{digest[:16]}"
        try:
            self.client.images.get(tag)
            return tag
        except docker.errors.ImageNotFound:
            pass
        self.progress(f"building {tag} on {base}")
        extra = {}
        if dockerfile is not None:
            generated = Path(tempfile.mkdtemp(prefix="trainyard-dockerfile-")) / "Dockerfile"
            generated.write_text(dockerfile)
            extra["dockerfile"] = str(generated)  # outside the context: docker-py sends it along
        try:
            self.client.images.build(
                path=str(source.folder),
                tag=tag,
                **extra,
                buildargs={"BASE_IMAGE": base},
                network_mode="host" if self.network == "host" else None,
                rm=True,
                forcerm=True,
                labels={LABEL_MANAGED: "1"},
            )
        except docker.errors.BuildError as exc:
            lines = "".join(str(chunk.get("stream") or chunk.get("error") or "") for chunk in exc.build_log)
            raise ProvisionError(f"building {tag} failed: {exc.msg}\n{lines[-3000:]}") from exc
        except docker.errors.APIError as exc:
            raise ProvisionError(f"building {tag} failed: {exc}") from exc
        return tag

    # -- containers -----------------------------------------------------------------------------------------
    def _ensure_network(self) -> None:
        if self.network in {"host", "bridge", "none"}:
            return
        if not self.client.networks.list(names=[self.network]):
            # internal=True: containers reach each other and the host, never the outside world.
            self.client.networks.create(self.network, driver="bridge", internal=True, labels={LABEL_MANAGED: "1"})

    def provision(self, source: EnvSource, *, replicas: int = 1, labels: dict[str, str] | None = None) -> Deployment:
        image = self.image_for(source)
        self._ensure_network()
        deployment = Deployment.new(self.kind, source, labels)

        def start(index: int):
            container, endpoint = self._run(image, source, deployment, index)
            return container.id, endpoint

        return start_replicas(deployment, replicas, start=start, wait=self._wait_healthy, teardown=self.teardown)

    def _run(self, image: str, source: EnvSource, deployment: Deployment, index: int):
        container_labels = {LABEL_MANAGED: "1", LABEL_DEPLOYMENT: deployment.deployment_id}
        container_labels.update({LABEL_PREFIX + k: str(v) for k, v in deployment.labels.items()})
        host_mode = self.network == "host"
        port = _free_port() if host_mode else CONTAINER_PORT
        options = dict(
            image=image,
            name=f"trainyard-{deployment.deployment_id}-{index}",
            labels=container_labels,
            environment={**source.server_env(port), "HOST": "127.0.0.1" if host_mode else "0.0.0.0"},
            read_only=True,
            tmpfs={"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},  # noqa: S108 - the container's own tmpfs
            user="65532:65532",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=self.memory,
            nano_cpus=int(self.cpus * 1e9),
            pids_limit=self.pids_limit,
            network_mode=self.network,
            # Data assets: read-only, at the same path as on the host, so the variables that name them hold inside.
            volumes={path: {"bind": path, "mode": "ro"} for path in source.mounts},
        )
        try:
            container = self.client.containers.create(**options)
        except docker.errors.APIError as exc:
            raise ProvisionError(f"creating a container of {image} failed: {exc}") from exc
        try:
            container.start()
        except docker.errors.APIError as exc:
            # Created but not started: remove it here, or it would outlive the deployment that never knew it.
            container.remove(force=True)
            raise ProvisionError(f"starting a container of {image} failed: {exc}") from exc
        if host_mode:
            return container, f"http://127.0.0.1:{port}"
        container.reload()
        networks = container.attrs["NetworkSettings"]["Networks"]
        address = next((n.get("IPAddress") for n in networks.values() if n.get("IPAddress")), None)
        if not address:
            raise ProvisionError(f"container {container.name} got no address on network {self.network}")
        return container, f"http://{address}:{CONTAINER_PORT}"

    def _logs(self, container_id: str, tail: int = 60) -> str:
        try:
            return self.client.containers.get(container_id).logs(tail=tail).decode(errors="replace")
        except docker.errors.APIError:
            return "(no log: the container is gone)"

    def _wait_healthy(self, container_id: str, endpoint: str) -> None:
        def died() -> str | None:
            try:
                container = self.client.containers.get(container_id)
            except docker.errors.NotFound:
                return "disappeared"
            if container.status in {"exited", "dead"}:
                return f"exited ({container.attrs['State'].get('ExitCode')})"
            return None

        wait_healthy(endpoint, timeout=self.start_timeout, died=died, log_tail=lambda: self._logs(container_id),
                     what="the environment container", poll=0.25,
                     log_all=lambda: self._logs(container_id, 2000))  # fmt: skip

    def health(self, deployment: Deployment) -> list[bool]:
        return [is_healthy(e) for e in deployment.endpoints]

    def dead_replicas(self, deployment: Deployment) -> list[str]:
        dead = []
        for index, container_id in enumerate(deployment.handles):
            try:
                container = self.client.containers.get(container_id)
            except docker.errors.NotFound:
                dead.append(f"replica {index}: its container is gone")
                continue
            if container.status in {"exited", "dead"}:
                code = container.attrs["State"].get("ExitCode")
                dead.append(f"replica {index}: its container exited ({code}): {self._logs(container_id, 5)[-300:]}")
        return dead

    def restart_replica(self, deployment: Deployment, index: int, source: EnvSource) -> None:
        """Restart one replica's container in place (same port, same address): calls a hung step left running
        die with it, and its sessions' slots come back."""
        container_id = deployment.handles[index]
        try:
            container = self.client.containers.get(container_id)
            container.restart(timeout=2)
        except docker.errors.APIError as exc:
            raise ProvisionError(f"restarting replica {index} failed: {exc}") from exc
        if self.network != "host":
            container.reload()
            networks = container.attrs["NetworkSettings"]["Networks"]
            address = next((n.get("IPAddress") for n in networks.values() if n.get("IPAddress")), None)
            if f"http://{address}:{CONTAINER_PORT}" != deployment.endpoints[index]:
                raise ProvisionError(f"replica {index} came back at another address ({address})")
        self._wait_healthy(container_id, deployment.endpoints[index])

    def teardown(self, deployment: Deployment) -> None:
        for container_id in list(deployment.handles):
            try:
                self.client.containers.get(container_id).remove(force=True)
            except docker.errors.NotFound:
                pass
            deployment.handles.remove(container_id)

    def managed_containers(self, **labels: str) -> list:
        filters = [f"{LABEL_MANAGED}=1"] + [f"{LABEL_PREFIX}{k}={v}" for k, v in labels.items()]
        return self.client.containers.list(all=True, filters={"label": filters})

    def reap(self, *, keep_deployments: set[str] = frozenset(), **labels: str) -> list[str]:
        """Force-remove managed containers matching `labels` whose deployment is not in `keep_deployments`."""
        removed = []
        for container in self.managed_containers(**labels):
            if container.labels.get(LABEL_DEPLOYMENT) in keep_deployments:
                continue
            try:
                container.remove(force=True)
                removed.append(container.name)
            except docker.errors.NotFound:
                pass
        return removed


# Byte for byte the built-ins' line: the engine's layer cache keys on an instruction's text.
RUNTIME_LAYER = (
    'RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir --no-deps "openenv==0.10.0" \\\n'
    "    && /opt/venv/bin/pip install --no-cache-dir fastapi uvicorn pydantic websockets requests httpx pyyaml \\\n"
    "       typing_extensions packaging fastmcp jsonschema\n"
)


def generated_dockerfile(package: str, requirements: list[str]) -> str:
    """A Dockerfile for an OpenEnv folder that brings none: OpenEnv's server-only runtime (as in the built-ins'
    Dockerfiles, so the engine shares that layer), the folder's own requirements, the folder as a package."""
    install = ""
    if requirements:
        quoted = " ".join(shlex.quote(r) for r in requirements)
        install = f"RUN /opt/venv/bin/pip install --no-cache-dir {quoted}\n"
    return (
        "ARG BASE_IMAGE=python:3.11-slim\n"
        "FROM ${BASE_IMAGE}\n"
        f"{RUNTIME_LAYER}"
        f"{install}"
        f"COPY . /app/{package}\n"
        "ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 "
        f"HOST=0.0.0.0 PORT=8000 PYTHONPATH=/app/{package}\n"
        "USER 65532:65532\n"
        f'CMD ["sh", "-c", "exec uvicorn --app-dir /app {package}.server.app:app '
        '--host \\"$HOST\\" --port \\"$PORT\\""]\n'
    )


def docker_available(client_factory: Callable[[], docker.DockerClient] = docker.from_env) -> str | None:
    """None when an engine answers, else the reason it does not."""
    try:
        client_factory().ping()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


__all__ = ["DockerProvider", "docker_available"]
