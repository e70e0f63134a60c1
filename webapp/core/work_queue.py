"""The one door from the web to the workers.

Work is a row first (a run, an evaluation, a job, a trust report) and a Celery message second: `work_queue` sends
the message by task name once the row is committed (a worker must see the row it is handed), and a broker that is
down loses nothing — the row stays waiting, and `stranded_requeue` sends it again when a worker is ready (its start)
and every minute from beat. Sending one twice is harmless: every task claims its row from the waiting state once.

Each kind of work registers itself here (in its app's `ready()`): the task that runs it, its queue, how to find
rows that never reached the broker, and how to remember that one did. The web never imports the workers' code; it
names their tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkItem:
    """One piece of work as the Workers page shows it (a run of another team is counted, never named)."""

    kind: str
    pk: int
    team_id: int
    name: str
    url: str
    status: str
    detail: str  # "step 3/10", "12/64 episodes"
    environment: str
    model: str
    waiting_since: datetime | None
    gpus: int = 0


@dataclass(frozen=True)
class WorkKind:
    name: str  # what the user calls it: "run", "evaluation", "job", "trust check"
    task: str  # the Celery task name a worker registers (workers/worker/tasks.py)
    queue: str  # "gpu" (loads a model) or "default" (CPU work)
    # Ids of rows still waiting that were recorded before the cutoff and never reached the broker.
    stranded: Callable[[datetime], Iterable[int]]
    # Remembers that a row's message reached the broker (its task id), so that it is not sent again.
    sent: Callable[[int, str], None] | None = None
    # For the Workers page: this kind's work waiting for a worker, oldest first; and some of it by id.
    waiting: Callable[[int], list[WorkItem]] = lambda limit: []
    described: Callable[[list[int]], dict[int, WorkItem]] = lambda pks: {}
    # The queue of one row when it is not always `queue` (a run for the Slurm cluster goes to "slurm").
    queue_of: Callable[[int], str] | None = None


_kinds: dict[str, WorkKind] = {}


def work_kind_register(kind: WorkKind) -> WorkKind:
    _kinds[kind.name] = kind
    return kind


def work_kinds() -> dict[str, WorkKind]:
    return dict(_kinds)


def work_send(kind_name: str, pk: int) -> bool:
    """Send now; False (logged, never raised) when the broker cannot take it: the row stays waiting."""
    from webapp.celery_app import app

    kind = _kinds[kind_name]
    try:
        queue = kind.queue_of(pk) if kind.queue_of is not None else kind.queue
        result = app.send_task(kind.task, args=[pk], queue=queue, retry=False)
    except Exception as exc:
        log.warning("could not queue %s %s now (%s: %s); it stays waiting and is queued again when a worker is ready",
                    kind.name, pk, type(exc).__name__, exc)  # fmt: skip
        return False
    if kind.sent is not None:
        kind.sent(pk, result.id)
    return True


def work_queue(kind_name: str, pk: int) -> None:
    """Send once the surrounding transaction commits (at once outside one)."""
    if kind_name not in _kinds:
        raise KeyError(f"no kind of work is registered as {kind_name!r}")
    transaction.on_commit(lambda: work_send(kind_name, pk))


def stranded_requeue(*, older_than_s: float) -> dict[str, list[int]]:
    """Every kind's waiting rows that never reached the broker, sent again; what was sent, by kind."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    sent: dict[str, list[int]] = {}
    for name, kind in _kinds.items():
        sent[name] = [pk for pk in list(kind.stranded(cutoff)) if work_send(name, pk)]  # read first, then send
    return sent


def work_waiting(*, queue: str, limit: int = 500) -> list[WorkItem]:
    """Every kind's work waiting on `queue`, oldest first (what the Workers page shows as the queue)."""
    items = [item for kind in _kinds.values() if kind.queue == queue for item in kind.waiting(limit)]
    return sorted(items, key=lambda item: (item.waiting_since is None, item.waiting_since, item.pk))[:limit]
