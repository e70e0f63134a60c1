from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if request.team is None:
        return render(request, "home.html")
    return redirect("runs:run-list")


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """A 400 that says why: the usual one is a form larger than the request limit (DATA_UPLOAD_MAX_MEMORY_SIZE)."""
    from django.core.exceptions import RequestDataTooBig

    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1_000_000
        reason = (
            f"The form is larger than this server accepts ({limit} MB). Put long prompt lists in a prompts file "
            f"(up to {settings.TRAINYARD_MAX_PROMPTS_MB} MB)."
        )
    else:
        reason = str(exception or "") or "The request could not be understood."
    if request.path.startswith("/api/"):  # the REST API answers JSON, even before it is reached (a bad Host header)
        too_big = isinstance(exception, RequestDataTooBig)
        return JsonResponse({"detail": "The request is larger than this server accepts." if too_big else reason,
                             "errors": {}}, status=413 if too_big else 400)  # fmt: skip
    if request.path.endswith(".json"):
        return JsonResponse({"error": {"request": [reason]}}, status=400)
    return render(request, "400.html", {"reason": reason}, status=400)
