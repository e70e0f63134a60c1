"""One asyncio loop on a daemon thread for every environment session of a process.

TRL calls tools from its own thread and expects plain return values; sessions are asyncio objects bound to one
loop. Running them all on this loop lets a sync tool call block on its own step while a turn's prefetch overlaps
the steps of every rollout.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def session_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="trainyard-env-loop", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run_on_session_loop(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    return asyncio.run_coroutine_threadsafe(coro, session_loop()).result(timeout)
