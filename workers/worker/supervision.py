"""A trainer or evaluator subprocess seen from the worker: spawn, watch, ask to stop, kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from envs.parent_death import child_environment

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Outcome:
    kind: str  # "succeeded", "failed", "cancelled"
    reason: str = ""


class SupervisedProcess:
    """A trainer (`workers.training.trainer RUN_ID`) or an evaluator (`workers.training.evaluator EVALUATION_ID`)
    started for one record, in a process group of its own, writing to `log_path`. `spare`: a standby process that
    has already imported the libraries and was handed this record (workers/worker/standby.py)."""

    def __init__(self, module: str, record_id: int, *, log_path: Path, processes: int = 1,
                 spare: subprocess.Popen | None = None) -> None:  # fmt: skip
        self.module = module
        self.record_id = record_id
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.warm = spare is not None  # libraries imported already: seconds off the start
        if spare is not None:
            self.popen = spare
            return
        command = [sys.executable, "-m", module, str(record_id)]
        if processes > 1:  # N ranks under torchrun (one group: signals reach every rank)
            command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
                       "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "--module",
                       module, str(record_id)]  # fmt: skip
        with log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **child_environment()},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own group: signals reach its children, not the worker
            )

    @property
    def what(self) -> str:
        return "the evaluator" if self.module.endswith("evaluator") else "the trainer"

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        return self.popen.poll()

    def log_tail(self, limit: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def stop(self, *, grace: float) -> None:
        """SIGTERM (the trainer stops at its next step), then SIGKILL after `grace` seconds."""
        if self.poll() is not None:
            return
        try:
            os.killpg(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.poll() is None:
            time.sleep(0.2)
        if self.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait(timeout=10)


def supervise(
    process: SupervisedProcess,
    *,
    cancel_requested: Callable[[], bool],
    heartbeat_age: Callable[[], float | None],
    cooperative_grace: float = 20.0,
    kill_grace: float = 10.0,
    heartbeat_timeout: float = 300.0,
    poll_seconds: float = 0.5,
    environment_dead: Callable[[], list[str]] = lambda: [],
    environment_upkeep: Callable[[], None] = lambda: None,
    environment_every: float = 2.0,
) -> Outcome:
    """Watch the process until it ends. A cancel is asked cooperatively first (the trainer reads the flag after
    each step), then escalated; a trainer whose heartbeat stops, or whose environment server died, is stopped."""
    cancel_seen_at: float | None = None
    environment_checked = time.monotonic()
    while True:
        code = process.poll()
        if code is not None:
            if cancel_seen_at is not None:
                return Outcome("cancelled")
            if code == 0:
                return Outcome("succeeded")
            if code < 0:
                return Outcome("failed", f"{process.what} was killed by signal {signal.Signals(-code).name}")
            return Outcome("failed", f"{process.what} exited with code {code}")
        if cancel_requested():
            if cancel_seen_at is None:
                cancel_seen_at = time.monotonic()
            elif time.monotonic() - cancel_seen_at > cooperative_grace:
                process.stop(grace=kill_grace)
        if time.monotonic() - environment_checked > environment_every:
            environment_checked = time.monotonic()
            environment_upkeep()  # replicas whose slots hung steps used up are restarted (workers/slot_keeper.py)
            dead = environment_dead()
            if dead:
                # Steps against a dead server only produce errored episodes: stop, and say which server died.
                process.stop(grace=kill_grace)
                return Outcome("failed", "the environment died: " + "; ".join(dead))
        age = heartbeat_age()
        if age is not None and age > heartbeat_timeout:
            process.stop(grace=kill_grace)
            return Outcome("failed", f"{process.what}'s heartbeat stopped for {age:.0f} s")
        time.sleep(poll_seconds)
