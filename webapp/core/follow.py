"""A record with a status (a run, an evaluation) followed from a terminal: a progress bar with its status, until it
ends."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO, TypeVar

from django.db import models
from tqdm import tqdm

Record = TypeVar("Record", bound=models.Model)


def progress_follow(record: Record, *, total: int, done: Callable[[Record], int], finished: tuple[str, ...],
                    unit: str, file: TextIO, timeout: float = float("inf"), poll: float = 1.0) -> Record:  # fmt: skip
    """Refresh `record` every `poll` seconds, drawing `done(record)` of `total`, until its status is in `finished`."""
    bar = tqdm(total=total, desc=getattr(record, "name", str(record)), unit=unit, file=file)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record.refresh_from_db()
        bar.n = done(record)
        bar.set_postfix_str(record.status)
        bar.refresh()
        if record.status in finished:
            break
        time.sleep(poll)
    bar.close()
    return record
