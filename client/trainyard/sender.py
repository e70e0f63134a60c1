"""The background sender: what a run logs goes into a bounded memory queue (a `log()` call never waits on the
network) and a thread sends it in batches. A batch that cannot be sent (the server unreachable, overloaded, or
restarting) goes to a spool file with its idempotency key and is sent again, in order, once the server answers; so
is anything logged while the memory queue is full. The server records each batch key once, so a batch sent twice
(its answer lost) is never doubled. Nothing is lost while the process lives; what is still spooled when it ends is
sent by `trainyard sync SPOOL`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainyard.http import ApiError

MAX_METRIC_VALUES = 1000  # the server's bounds of one batch
MAX_EPISODES = 256
MAX_BYTES = 900_000  # under the server's 1 MiB, with room for the envelope
OVERFLOW_CHUNK = 500  # items logged past a full queue, written to the spool together

Item = tuple[str, dict[str, Any]]  # ("metric", {"step", "values", "wall_time"}) or ("episode", {...})


def batches_of(items: list[Item]) -> list[dict[str, Any]]:
    """Items cut into batches within the server's bounds, each with a fresh idempotency key."""
    batches: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    values = episodes = size = 0

    def start() -> None:
        nonlocal current, values, episodes, size
        current = {"batch_id": uuid.uuid4().hex, "metrics": [], "episodes": []}
        batches.append(current)
        values = episodes = size = 0

    start()
    for kind, item in items:
        weight = len(json.dumps(item, default=str))
        count = len(item.get("values", {})) if kind == "metric" else 0
        full = (values + count > MAX_METRIC_VALUES or size + weight > MAX_BYTES
                or (kind == "episode" and episodes + 1 > MAX_EPISODES))  # fmt: skip
        if full and (current["metrics"] or current["episodes"]):
            start()
        current["metrics" if kind == "metric" else "episodes"].append(item)
        values, size = values + count, size + weight
        episodes += kind == "episode"
    return [b for b in batches if b["metrics"] or b["episodes"]]


class Spool:
    """Batches waiting for the server, on disk: a JSON line per batch, and one per batch since sent."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, batch: dict[str, Any]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"batch": batch}, default=str) + "\n")
                out.flush()
                os.fsync(out.fileno())

    def ack(self, batch_id: str) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"ack": batch_id}) + "\n")

    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            if not self.path.exists():
                return []
            batches: dict[str, dict[str, Any]] = {}
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a crash
                if "batch" in record:
                    batches[record["batch"]["batch_id"]] = record["batch"]
                elif "ack" in record:
                    batches.pop(record["ack"], None)
            return list(batches.values())

    def clear_if_done(self) -> None:
        if not self.pending():
            with self._lock:
                self.path.unlink(missing_ok=True)


class Sender(threading.Thread):
    def __init__(
        self, send: Callable[[dict[str, Any]], dict[str, Any]], beat: Callable[[], dict[str, Any]], spool: Spool, *,
        max_items: int = 20_000, every: float = 1.0, heartbeat_every: float = 10.0,
    ) -> None:  # fmt: skip
        super().__init__(name="trainyard-sender", daemon=True)
        self.send, self.beat, self.spool = send, beat, spool
        self.max_items, self.every, self.heartbeat_every = max_items, every, heartbeat_every
        self._items: deque[Item] = deque()
        self._overflow: list[Item] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._stopping = threading.Event()
        self._retry_at = 0.0
        self._delay = 0.0
        self._last_contact = time.monotonic()
        self.state: dict[str, Any] = {}  # the server's last word: status, cancel_requested
        self.ended = False  # the server says the run has ended: nothing more is taken
        self.dropped = 0  # batches the server refused as malformed (said on stderr)

    # -- the training side: never waits on the network ------------------------------------------------------
    def put(self, kind: str, item: dict[str, Any]) -> None:
        with self._lock:
            if len(self._items) < self.max_items:
                self._items.append((kind, item))
                self._idle.clear()
                return
            # The queue is full (the server has been away long): to disk, sent later, a few hundred at a time so
            # that a log() call rarely pays for a write.
            self._overflow.append((kind, item))
            if len(self._overflow) < OVERFLOW_CHUNK:
                return
            overflow, self._overflow = self._overflow, []
        self._spool_all(overflow)

    def _spool_all(self, items: list[Item]) -> None:
        for batch in batches_of(items):
            self.spool.append(batch)

    def _spool_overflow(self) -> None:
        with self._lock:
            overflow, self._overflow = self._overflow, []
        if overflow:
            self._spool_all(overflow)

    # -- the thread -------------------------------------------------------------------------------------------
    def run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self.every)
            self._wake.clear()
            self.round()

    def round(self) -> None:
        # What overflowed goes to the spool first. Order between batches changes nothing that is recorded: the server
        # keys a point by its name and step, and records each batch once.
        self._spool_overflow()
        if time.monotonic() < self._retry_at:
            return
        try:
            for batch in self.spool.pending():
                self._post(batch)
                self.spool.ack(batch["batch_id"])
            while True:
                with self._lock:
                    items = list(self._items)
                    self._items.clear()
                if not items:
                    break
                batches = batches_of(items)
                for index, batch in enumerate(batches):
                    try:
                        self._post(batch)
                    except ApiError:
                        for unsent in batches[index:]:
                            self.spool.append(unsent)
                        raise
            if time.monotonic() - self._last_contact >= self.heartbeat_every:
                self.state = self.beat()
                self._last_contact = time.monotonic()
            self._delay = 0.0
            self._idle.set()
        except ApiError as exc:
            self._delay = min(30.0, max(0.5, self._delay * 2))
            self._retry_at = time.monotonic() + self._delay
            if not exc.retryable:
                self._idle.set()

    def _post(self, batch: dict[str, Any]) -> None:
        if self.ended:
            return
        try:
            self.state = self.send(batch)
        except ApiError as exc:
            if exc.retryable:
                raise
            if exc.status == 409:  # the run has ended (finished, or cancelled and closed): nothing more to send
                self.ended = True
                return
            self.dropped += 1  # malformed: sending it again cannot help
            print(f"trainyard: a batch was refused and dropped: {exc}", file=sys.stderr)
        self._last_contact = time.monotonic()

    # -- the end ----------------------------------------------------------------------------------------------
    def flush(self, timeout: float) -> bool:
        """Send everything now; True once the memory queue and the spool are empty (within `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._retry_at = min(self._retry_at, time.monotonic() + 0.5)
            self._idle.clear()
            self._wake.set()
            self._idle.wait(min(1.0, max(0.0, deadline - time.monotonic())))
            with self._lock:
                empty = not self._items and not self._overflow
            if empty and not self.spool.pending():
                return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self.is_alive():
            self.join(timeout=5)
