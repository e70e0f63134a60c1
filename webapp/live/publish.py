"""publish(): the only way bytes reach a socket.

Events are stored first (RunEvent, with the run's next sequence numbers: the database is the source of truth) and
then handed to a sender thread with its own event loop and Redis connection. The sender merges what waits for a
group into one frame and sends at most one frame per group every 50 ms, in order, so a fast trainer neither waits
on Redis nor floods a browser; a page that missed anything replays it from the database.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import threading
from collections.abc import Iterable
from typing import Any

from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.db import connection, transaction

from webapp.live.groups import run_group, team_runs_group

log = logging.getLogger(__name__)

RUNS_LIST_TYPES = frozenset(
    {"run.status", "run.progress", "run.alert"}
)  # the runs list, live: chips, steps, sparkline, alerts


def events_append(run_id: int, events: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Store events with consecutive sequence numbers; return them as messages ({"seq", "type", ...payload})."""
    from webapp.live.models import RunEvent

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


def frame_encoded(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's frame as the browser gets it, encoded once here rather than once per viewer (fifty viewers of a run
    would otherwise cost fifty encodings of every frame on the web server's event loop)."""
    return {"type": "run.messages", "first": messages[0]["seq"], "last": messages[-1]["seq"],
            "text": json.dumps({"type": "batch", "messages": messages})}  # fmt: skip


class Sender:
    """One daemon thread per process that owns the channel layer's connections.

    The throttle: a group gets at most one frame per `min_interval`. The first message after a quiet spell goes at
    once; whatever arrives while the group waits out its interval is merged into the next frame, so a trainer that
    publishes a thousand times a second still costs a browser twenty frames.
    """

    def __init__(self, min_interval: float = 0.05) -> None:
        self.min_interval = min_interval
        self.loop = asyncio.new_event_loop()
        self.pending = 0
        self.idle = threading.Condition()
        self.queue: asyncio.Queue | None = None
        self.waiting: dict[str, tuple[list[dict[str, Any]], int]] = {}  # group -> (merged messages, submissions)
        self.senders: dict[str, asyncio.Task] = {}  # group -> the task sending its frames
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
            group, message = await self.queue.get()
            self._merge(group, message)
            if group not in self.senders:  # groups are independent: each has its own sender task, in order within
                self.senders[group] = asyncio.create_task(self._send_group(layer, group))

    def _merge(self, group: str, message: dict[str, Any]) -> None:
        """Consecutive messages of a kind (and run) are merged into one; order is kept."""
        messages, count = self.waiting.get(group, ([], 0))
        last = messages[-1] if messages else None
        same_kind = last is not None and (last["type"], last.get("run_id")) == (message["type"], message.get("run_id"))
        if same_kind and "messages" in message:
            messages[-1] = {**last, "messages": last["messages"] + message["messages"]}
        else:
            messages.append(message)
        self.waiting[group] = (messages, count + 1)

    async def _send_group(self, layer, group: str) -> None:
        try:
            while group in self.waiting:
                messages, count = self.waiting.pop(group)
                await self._send_in_order(layer, group, messages)
                with self.idle:
                    self.pending -= count
                    self.idle.notify_all()
                await asyncio.sleep(self.min_interval)
        finally:
            del self.senders[group]

    @staticmethod
    async def _send_in_order(layer, group: str, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            if message["type"] == "run.messages":
                message = frame_encoded(message["messages"])
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
        if layer is not None:
            try:
                asyncio.run_coroutine_threadsafe(_layer_close(layer), self.loop).result(5)
            except Exception:  # noqa: S110 - closing is best effort
                pass


async def _layer_close(layer) -> None:
    """Close this loop's Redis connections (a worker's loop ends with its run; connections must not outlive it)."""
    if isinstance(layer, RedisPubSubChannelLayer):
        await layer.flush()  # for the pub/sub layer, flush means: unsubscribe and close, on this loop only
    elif hasattr(layer, "close_pools"):
        await layer.close_pools()


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
    """Store, then send to the run's group (and, given the team, status and progress to the team's runs list)."""
    messages = events_append(run_id, events)
    if not messages or get_channel_layer() is None:
        return messages

    def send() -> None:
        s = sender()
        s.submit(run_group(run_id), {"type": "run.messages", "messages": messages})
        for_list = [m for m in messages if m["type"] in RUNS_LIST_TYPES]
        if team_id is not None and for_list:
            s.submit(team_runs_group(team_id), {"type": "runs.messages", "run_id": run_id, "messages": for_list})

    # Inside a transaction, send only once it commits: a page must never see what the database may roll back.
    transaction.on_commit(send)
    return messages


def flush(timeout: float = 5.0) -> bool:
    return _sender.flush(timeout) if _sender is not None else True


def close_layer() -> None:
    """Send what is queued and close the layer's Redis pools (a worker process calls this when a run ends)."""
    if _sender is not None:
        _sender.close()
