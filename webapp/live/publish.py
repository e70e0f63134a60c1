"""publish(): the only way bytes reach a socket.

Events are stored first (RunEvent, with the run's next sequence numbers: the database is the source of truth) and
then handed to a sender thread with its own event loop and Redis pool. The sender drains everything queued, merges
it into one batch per group and sends in order, so a fast trainer neither waits on Redis nor floods a browser; a
page that missed anything replays it from the database.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from collections.abc import Iterable
from typing import Any

from channels.layers import get_channel_layer
from django.db import connection, transaction

from webapp.live.groups import run_group, team_runs_group

log = logging.getLogger(__name__)


def events_append(run_id: int, events: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Store events with consecutive sequence numbers; return them as messages ({"seq", "type", ...payload})."""
    from webapp.runs.models import RunEvent

    events = list(events)
    if not events:
        return []
    with transaction.atomic():
        # One round trip takes the next sequence numbers (the row lock orders concurrent publishers of a run).
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE runs_run SET last_seq = last_seq + %s WHERE id = %s RETURNING last_seq", [len(events), run_id]
            )
            (last,) = cursor.fetchone()
        first = last - len(events) + 1
        rows = [RunEvent(run_id=run_id, seq=first + i, type=kind, payload=payload) for i, (kind, payload) in
                enumerate(events)]  # fmt: skip
        RunEvent.objects.bulk_create(rows)
    return [{"seq": row.seq, "type": row.type, **row.payload} for row in rows]


class Sender:
    """One daemon thread per process that owns the channel layer's connections."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pending = 0
        self.idle = threading.Condition()
        self.queue: asyncio.Queue | None = None
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), name="trainyard-publisher", daemon=True)
        self.thread.start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.queue = asyncio.Queue()
        self.loop.create_task(self._drain())
        ready.set()
        self.loop.run_forever()

    def submit(self, group: str, message: dict[str, Any]) -> None:
        with self.idle:
            self.pending += 1
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (group, message))

    async def _drain(self) -> None:
        layer = get_channel_layer()
        while True:
            batch = [await self.queue.get()]
            while not self.queue.empty():
                batch.append(self.queue.get_nowait())
            by_group: dict[str, list[dict[str, Any]]] = {}
            for group, message in batch:  # per group: consecutive messages of a type merged, order kept
                queue = by_group.setdefault(group, [])
                same_kind = (
                    queue and queue[-1]["type"] == message["type"] and queue[-1].get("run_id") == message.get("run_id")
                )
                if same_kind and "messages" in message:
                    queue[-1] = {**queue[-1], "messages": queue[-1]["messages"] + message["messages"]}
                else:
                    queue.append(message)
            # Groups are independent: send them concurrently; within a group, in order.
            await asyncio.gather(*(self._send_in_order(layer, g, msgs) for g, msgs in by_group.items()))
            with self.idle:
                self.pending -= len(batch)
                self.idle.notify_all()

    @staticmethod
    async def _send_in_order(layer, group: str, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            try:
                await layer.group_send(group, message)
            except Exception:  # the database has it; pages catch up on reconnect
                log.warning("could not publish to %s", group, exc_info=True)

    def flush(self, timeout: float = 5.0) -> bool:
        with self.idle:
            return self.idle.wait_for(lambda: self.pending == 0, timeout)

    def close(self) -> None:
        self.flush()
        layer = get_channel_layer()
        if layer is not None and hasattr(layer, "close_pools"):
            try:
                asyncio.run_coroutine_threadsafe(layer.close_pools(), self.loop).result(5)
            except Exception:  # noqa: S110 - closing is best effort
                pass


_sender: Sender | None = None
_sender_lock = threading.Lock()


def sender() -> Sender:
    global _sender
    with _sender_lock:
        if _sender is None or not _sender.thread.is_alive():
            _sender = Sender()
            atexit.register(_sender.flush)
        return _sender


def publish(run_id: int, events: Iterable[tuple[str, dict[str, Any]]], *, team_id: int | None = None) -> list[dict]:
    """Store, then send to the run's group (and status changes to the team's runs list)."""
    messages = events_append(run_id, events)
    if not messages or get_channel_layer() is None:
        return messages

    def send() -> None:
        s = sender()
        s.submit(run_group(run_id), {"type": "run.messages", "messages": messages})
        statuses = [m for m in messages if m["type"] == "run.status"]
        if team_id is not None and statuses:
            s.submit(team_runs_group(team_id), {"type": "runs.messages", "run_id": run_id, "messages": statuses})

    # Inside a transaction, send only once it commits: a page must never see what the database may roll back.
    transaction.on_commit(send)
    return messages


def flush(timeout: float = 5.0) -> bool:
    return _sender.flush(timeout) if _sender is not None else True


def close_layer() -> None:
    """Send what is queued and close the layer's Redis pools (a worker process calls this when a run ends)."""
    if _sender is not None:
        _sender.close()
