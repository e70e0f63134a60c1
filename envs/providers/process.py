"""Environment servers as local processes: the laptop default and the embedded demo's provider."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from envs.parent_death import child_environment
from envs.providers.base import Deployment, EnvSource, ProvisionError, is_healthy, start_replicas, wait_healthy
from envs.providers.server_standby import spare_take

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ServerProcess:
    pid: int
    log_path: Path
    popen: subprocess.Popen | None = None


def log_tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


class ProcessProvider:
    kind = "process"

    def __init__(
        self,
        *,
        log_dir: str | Path | None = None,
        start_timeout: float = 60.0,
        stop_grace: float = 5.0,
        python: str = sys.executable,
    ) -> None:
        self.log_dir = Path(log_dir) if log_dir else Path(tempfile.gettempdir()) / "trainyard-env-logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.start_timeout = start_timeout
        self.stop_grace = stop_grace
        self.python = python

    def provision(self, source: EnvSource, *, replicas: int = 1, labels: dict[str, str] | None = None) -> Deployment:
        if source.kind != "folder":
            raise ProvisionError(f"the process provider runs environment folders, not a {source.kind} source")
        if not (source.folder / "server" / "app.py").exists():
            raise ProvisionError(f"{source.folder} has no server/app.py")
        deployment = Deployment.new(self.kind, source, labels)
        return start_replicas(
            deployment,
            replicas,
            start=lambda index: self._start(source, deployment.deployment_id, index),
            wait=lambda server, endpoint: self._wait_healthy(endpoint, server),
            teardown=self.teardown,
        )

    def _start(self, source: EnvSource, deployment_id: str, index: int, port: int = 0) -> tuple[ServerProcess, str]:
        # We bind and listen ourselves and hand the socket down: the port is ours from the start, no race.
        port_wanted = port
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            sock.close()
            raise ProvisionError(f"cannot listen on 127.0.0.1:{port} again: {exc}") from exc
        sock.listen(512)
        port = sock.getsockname()[1]
        log_path = self.log_dir / f"{source.package}-{deployment_id}-{index}.log"
        env = {**os.environ, **source.server_env(port), **child_environment()}
        # The package alone (`echo_env.server.app`, through a folder holding just a link to it, so that the folder's
        # neighbours never shadow a real package), the repository (our serve module), and the folder itself, last,
        # for upstream servers whose import fallbacks say `from models import ...`.
        root = self._package_root(source)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in [str(root), str(REPO_ROOT), env.get("PYTHONPATH", ""), str(source.folder)] if p
        )
        env["PYTHONUNBUFFERED"] = "1"
        python = source.python or self.python
        app = f"{source.package}.server.app:app"
        if port_wanted == 0:  # a first start: a spare server with OpenEnv imported takes it, when there is one
            spare = spare_take(python=python, listening=sock, app=app, cwd=root, log_path=log_path,
                               env={**source.server_env(port), **child_environment(), "PYTHONUNBUFFERED": "1"},
                               paths_first=[str(root)], paths_last=[str(source.folder)])  # fmt: skip
            if spare is not None:
                sock.close()
                return ServerProcess(pid=spare.pid, log_path=log_path, popen=spare), f"http://127.0.0.1:{port}"
        command = [python, "-m", "envs.providers.serve", "--fd", str(sock.fileno()), "--app", app]
        try:
            with log_path.open("ab") as log:  # a restarted replica goes on in the same log
                popen = subprocess.Popen(
                    command,
                    cwd=root,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    pass_fds=[sock.fileno()],
                    start_new_session=True,  # its own process group: teardown signals the whole tree
                )
        finally:
            sock.close()
        return ServerProcess(pid=popen.pid, log_path=log_path, popen=popen), f"http://127.0.0.1:{port}"

    def _package_root(self, source: EnvSource) -> Path:
        digest = hashlib.sha256(str(source.folder).encode()).hexdigest()[:12]
        root = self.log_dir / "packages" / f"{source.package}-{digest}"
        link = root / source.package
        if not link.is_symlink():
            root.mkdir(parents=True, exist_ok=True)
            temporary = root / f".{source.package}.{os.getpid()}"
            temporary.unlink(missing_ok=True)
            temporary.symlink_to(source.folder, target_is_directory=True)
            temporary.replace(link)  # atomic: two providers starting the same folder never see half a link
        return root

    def _wait_healthy(self, endpoint: str, server: ServerProcess) -> None:
        def died() -> str | None:
            code = server.popen.poll() if server.popen is not None else None
            return None if code is None else f"exited with code {code}"

        wait_healthy(endpoint, timeout=self.start_timeout, died=died, log_tail=lambda: log_tail(server.log_path),
                     what="the environment server", log_path=str(server.log_path),
                     log_all=lambda: log_tail(server.log_path, 200_000))  # fmt: skip

    def health(self, deployment: Deployment) -> list[bool]:
        return [is_healthy(endpoint) for endpoint in deployment.endpoints]

    def dead_replicas(self, deployment: Deployment) -> list[str]:
        dead = []
        for index, server in enumerate(deployment.handles):
            code = server.popen.poll() if server.popen is not None else None
            if code is not None:
                how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
                tail = log_tail(server.log_path, 300).strip().splitlines()[-2:]
                dead.append(f"replica {index}: its server {how}" + (f" ({' | '.join(tail)})" if tail else ""))
        return dead

    def server_log(self, deployment: Deployment, limit: int = 20_000) -> str:
        """The end of each replica's server log (what a failed call left there: a traceback naming a missing file)."""
        return "\n".join(log_tail(server.log_path, limit) for server in deployment.handles)

    def restart_replica(self, deployment: Deployment, index: int, source: EnvSource) -> None:
        """Stop one replica's server and start it again on the same port: calls a hung step left running die with
        it, and its sessions' slots come back. Clients of that replica see their sessions end."""
        self._stop(deployment.handles[index])
        port = int(deployment.endpoints[index].rsplit(":", 1)[1])
        server, endpoint = self._start(source, deployment.deployment_id, index, port=port)
        deployment.handles[index] = server
        self._wait_healthy(endpoint, server)

    def teardown(self, deployment: Deployment) -> None:
        for server in deployment.handles:
            self._stop(server)
        deployment.handles.clear()

    def _stop(self, server: ServerProcess) -> None:
        try:
            os.killpg(server.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + self.stop_grace
        while time.monotonic() < deadline:
            if server.popen is not None and server.popen.poll() is not None:
                break
            if server.popen is None and not _alive(server.pid):
                break
            time.sleep(0.05)
        else:
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if server.popen is not None:
            try:
                server.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
