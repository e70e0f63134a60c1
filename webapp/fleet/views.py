from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from webapp.accounts.selectors import team_list_for_user
from webapp.fleet.fleet_state import fleet_state
from webapp.fleet.health import system_health


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The database, Redis and the workers of both queues (from their recorded heartbeats): 503 when one is down."""
    checks = system_health()
    ok = all(check.ok for check in checks.values())
    body = {"status": "ok" if ok else "degraded", **{name: c.as_dict() for name, c in checks.items()}}
    return JsonResponse(body, status=200 if ok else 503)


@login_required
def workers_view(request: HttpRequest) -> HttpResponse:
    """Every worker with its heartbeat and the work waiting for one, in order (other teams' counted, not named)."""
    team_ids = set(team_list_for_user(user=request.user).values_list("pk", flat=True))
    return render(request, "fleet/workers.html", fleet_state(team_ids=team_ids))
