"""publish(): the only way bytes reach a socket. Events are stored first (RunEvent, with the run's next sequence
numbers) and only then sent, so a page that missed a message can always replay it from the database."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from webapp.live.groups import run_group, team_runs_group

log = logging.getLogger(__name__)


def events_append(run_id: int, events: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Store events with consecutive sequence numbers; return them as messages ({"seq", "type", ...payload})."""
    from webapp.runs.models import Run, RunEvent

    events = list(events)
    if not events:
        return []
    with transaction.atomic():
        Run.objects.filter(pk=run_id).update(last_seq=F("last_seq") + len(events))
        last = Run.objects.filter(pk=run_id).values_list("last_seq", flat=True).get()
        first = last - len(events) + 1
        rows = [RunEvent(run_id=run_id, seq=first + i, type=kind, payload=payload) for i, (kind, payload) in
                enumerate(events)]  # fmt: skip
        RunEvent.objects.bulk_create(rows)
    return [{"seq": row.seq, "type": row.type, **row.payload} for row in rows]


def publish(run_id: int, events: Iterable[tuple[str, dict[str, Any]]], *, team_id: int | None = None) -> list[dict]:
    """Store, then send to the run's group (and a status summary to the team's runs list)."""
    messages = events_append(run_id, events)
    if not messages:
        return messages
    layer = get_channel_layer()
    if layer is None:
        return messages
    try:
        send = async_to_sync(layer.group_send)
        send(run_group(run_id), {"type": "run.messages", "messages": messages})
        if team_id is not None:
            summaries = [m for m in messages if m["type"] == "run.status"]
            if summaries:
                send(team_runs_group(team_id), {"type": "runs.messages", "run_id": run_id, "messages": summaries})
    except Exception:  # the database has it; a page will catch up on reconnect
        log.warning("could not publish %d live messages of run %s", len(messages), run_id, exc_info=True)
    return messages


def close_layer() -> None:
    """Close the layer's Redis pools: worker processes call this so connections don't pile up on dead loops."""
    layer = get_channel_layer()
    if layer is not None and hasattr(layer, "close_pools"):
        try:
            async_to_sync(layer.close_pools)()
        except Exception:  # noqa: S110 - nothing to keep when closing
            pass
