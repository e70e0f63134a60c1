"""A real web server (Daphne, as in production) on the test database, that a test can stop and start again, and
scripts that report to it with the client as a user's training script would."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, subprocess_env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class WebServer:
    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "webapp.asgi:application"],
                cwd=ROOT, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/api/v1/openapi.json", timeout=1)
                return
            except httpx.HTTPError:
                assert self.proc.poll() is None, self.log_path.read_text()[-3000:]
                time.sleep(0.2)
        raise AssertionError(f"the web server did not answer: {self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


@pytest.fixture
def web_server(tmp_path):
    server = WebServer(tmp_path / "daphne.log")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def script(tmp_path, web_server):
    """Start a Python script (its text) that reports with the client, with TRAINYARD_URL and the token set."""

    def start(text: str, token: str, args: tuple[str, ...] = (), **env: str) -> subprocess.Popen:
        path = tmp_path / "train.py"
        path.write_text(text)
        log = (tmp_path / "script.log").open("wb")
        return subprocess.Popen(
            [sys.executable, str(path), *args], cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
            env=subprocess_env(TRAINYARD_URL=web_server.url, TRAINYARD_TOKEN=token,
                               TRAINYARD_SPOOL_DIR=str(tmp_path / "spool"), **env),
        )  # fmt: skip

    return start
