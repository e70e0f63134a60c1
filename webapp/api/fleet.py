"""/api/v1/workers: the workers (shared by every team) and the queue, another team's work counted, never named."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from webapp.api.auth import token_of
from webapp.api.responses import answers
from webapp.api.schemas import FleetOut
from webapp.fleet.fleet_state import fleet_state

router = Router(tags=["workers"])


@router.get("/workers", response=answers(FleetOut), summary="Workers with their heartbeats, and the queue in order")
def fleet(request: HttpRequest):
    state = fleet_state(team_ids={token_of(request).team_id})
    return {
        "workers": [
            {"name": r.worker.name, "host": r.worker.host, "queues": list(r.worker.queues or []),
             "gpus": list(r.worker.gpus or []), "alive": r.alive, "seen_at": r.worker.seen_at,
             "current_runs": [item.pk for item in r.runs if item is not None]}
            for r in state["workers"]
        ],
        "queued": [
            {"position": q.position, "kind": q.kind, "waited_s": q.waited_s, "gpus": q.gpus,
             "id": q.item.pk if q.item else None, "name": q.item.name if q.item else "another team's work",
             "status": q.item.status if q.item else ""}
            for q in state["queued"]
        ],
    }  # fmt: skip
