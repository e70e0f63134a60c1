from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from webapp.core.health import system_health


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    checks = system_health()
    ok = all(check.ok for check in checks.values())
    body = {"status": "ok" if ok else "degraded", **{name: c.as_dict() for name, c in checks.items()}}
    return JsonResponse(body, status=200 if ok else 503)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if request.team is None:
        return render(request, "home.html")
    return redirect("runs:run-list")
