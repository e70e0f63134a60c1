"""A run launched outside Trainyard, reported to it: `trainyard.init(...)` creates it on the server and returns a
`Run` whose `log`, `log_episodes` and `finish` a training script calls.

At exit an unfinished run finishes as succeeded; an uncaught exception ends it crashed (with the error), and so
does SIGTERM or SIGINT. A process killed outright (SIGKILL, a lost machine) cannot say anything: the server
crashes its run once it stops beating.
"""

from __future__ import annotations

import atexit
import math
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from trainyard.http import ApiError, call
from trainyard.sender import Sender, Spool

CLIENT = "trainyard-client/0.1.0"


def _spool_dir() -> Path:
    configured = os.environ.get("TRAINYARD_SPOOL_DIR")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "trainyard-client"


def _finite(values: dict[str, Any]) -> dict[str, float]:
    out = {}
    for name, value in values.items():
        if hasattr(value, "item"):  # a 0-d tensor or a numpy scalar
            try:
                value = value.item()
            except (TypeError, ValueError):
                continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            continue
        out[str(name)] = float(value)
    return out


class Run:
    """One external run on the server. Thread-safe; `log` and `log_episodes` return at once."""

    def __init__(self, *, url: str, token: str, record: dict[str, Any], spool_dir: Path | None = None,
                 flush_every: float = 1.0, heartbeat_every: float = 10.0) -> None:  # fmt: skip
        self.url = url.rstrip("/")
        self.token = token
        self.record = record
        self.id: int = record["id"]
        self.name: str = record["name"]
        self.finished = False
        self._finish_lock = threading.Lock()
        spool = Spool((spool_dir or _spool_dir()) / f"{self.url.split('//')[-1].replace('/', '_')}-run-{self.id}.jsonl")
        self._sender = Sender(self._send, self._beat, spool, every=flush_every, heartbeat_every=heartbeat_every)
        self._sender.start()

    def __repr__(self) -> str:
        return f"<trainyard.Run {self.id} {self.name!r} at {self.page_url}>"

    @property
    def page_url(self) -> str:
        return f"{self.url}/runs/{self.id}/"

    @property
    def spool_path(self) -> Path:
        return self._sender.spool.path

    @property
    def cancel_requested(self) -> bool:
        """Someone cancelled the run in Trainyard: stop training, then `finish("cancelled")`."""
        return bool(self._sender.state.get("cancel_requested"))

    def _endpoint(self, tail: str) -> str:
        return f"{self.url}/api/v1/runs/{self.id}/{tail}"

    def _send(self, batch: dict[str, Any]) -> dict[str, Any]:
        return call("POST", self._endpoint("log"), self.token, batch, timeout=30)

    def _beat(self) -> dict[str, Any]:
        return call("POST", self._endpoint("heartbeat"), self.token, timeout=10)

    # -- what a script calls ------------------------------------------------------------------------------------
    def log(self, metrics: dict[str, Any], step: int) -> None:
        """Numbers of one step (others, NaN and infinities are left out), e.g. `run.log({"reward": 0.4}, step=3)`."""
        values = _finite(metrics)
        if values and not self.finished:
            self._sender.put("metric", {"step": int(step), "values": values, "wall_time": time.time()})

    def log_episodes(self, episodes: list[dict[str, Any]]) -> None:
        """Episodes, each with at least `step`, `group`, `reward` and `turns` (chat messages as the transcript shows
        them), optionally `advantage`, `prompt`, `environment`, `error`, `index` (in its group) and `reset`."""
        for episode in episodes:
            missing = {"step", "group", "reward"} - set(episode)
            if missing:
                raise ValueError(f"an episode needs {', '.join(sorted(missing))}")
            if not self.finished:
                self._sender.put("episode", dict(episode))

    def flush(self, timeout: float = 60.0) -> bool:
        """Send what is queued now; True when the server has all of it."""
        return self._sender.flush(timeout)

    def finish(self, status: str = "succeeded", reason: str = "", *, timeout: float = 120.0) -> None:
        """Send what is left (waiting up to `timeout` for a server that is away), then say how the run ended:
        succeeded, failed, cancelled or crashed. A second call does nothing."""
        with self._finish_lock:
            if self.finished:
                return
            self.finished = True
        sent = self._sender.flush(timeout)
        self._sender.stop()
        if not sent:
            print(f"trainyard: the server did not take everything within {timeout:.0f} s; what is left is kept in "
                  f"{self.spool_path}: send it with `trainyard sync {self.spool_path}`", file=sys.stderr)  # fmt: skip
        for attempt in range(5):
            try:
                call("POST", self._endpoint("finish"), self.token, {"status": status, "reason": reason[:10_000]})
                break
            except ApiError as exc:
                if not exc.retryable or attempt == 4:
                    print(f"trainyard: could not mark run {self.id} {status}: {exc}", file=sys.stderr)
                    break
                time.sleep(min(10, 2**attempt))
        if sent:
            self._sender.spool.clear_if_done()


_active: list[Run] = []
_hooks_installed = False


def init(
    *, url: str | None = None, token: str | None = None, environment: str, name: str = "", model: str = "",
    config: dict[str, Any] | None = None, max_steps: int = 0, tags: list[str] | None = None,
    environment_version: str | None = None, flush_every: float = 1.0, heartbeat_every: float = 10.0,
) -> Run:  # fmt: skip
    """Create an external run on the Trainyard server and return it. `url` and `token` default to TRAINYARD_URL and
    TRAINYARD_TOKEN (a write token); `environment` is the slug of the catalog environment it trains on."""
    url = url or os.environ.get("TRAINYARD_URL") or ""
    token = token or os.environ.get("TRAINYARD_TOKEN") or ""
    if not url or not token:
        raise ValueError("trainyard.init needs url= and token= (or TRAINYARD_URL and TRAINYARD_TOKEN)")
    body = {
        "environment": environment, "environment_version": environment_version, "name": name, "model": model,
        "config": config or {}, "max_steps": max_steps, "tags": tags or [], "host": socket.gethostname(),
        "command": " ".join([Path(sys.executable).name, *sys.argv])[:2000], "client": CLIENT,
    }  # fmt: skip
    record = call("POST", f"{url.rstrip('/')}/api/v1/runs/external", token, body, timeout=30)
    run = Run(url=url, token=token, record=record, flush_every=flush_every, heartbeat_every=heartbeat_every)
    _active.append(run)
    _install_hooks()
    print(f"trainyard: run {run.id} {run.name!r}: {run.page_url}", file=sys.stderr)
    return run


def _finish_all(status: str, reason: str = "") -> None:
    for run in list(_active):
        if not run.finished:
            run.finish(status, reason, timeout=60)


def _install_hooks() -> None:
    """At exit: succeeded. An uncaught exception: crashed, with its traceback. SIGTERM, SIGINT: crashed."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_finish_all, "succeeded")
    previous_hook = sys.excepthook

    def excepthook(kind, value, tb) -> None:
        _finish_all("crashed", "".join(traceback.format_exception(kind, value, tb))[-10_000:])
        previous_hook(kind, value, tb)

    sys.excepthook = excepthook
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)

        def handler(number, frame, previous=previous) -> None:
            _finish_all("crashed", f"stopped by {signal.Signals(number).name}")
            if callable(previous):
                previous(number, frame)
            else:
                raise SystemExit(128 + number)

        signal.signal(signum, handler)
