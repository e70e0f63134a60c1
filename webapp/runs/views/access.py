"""The run a request may see, or a 404 (another team's run is never said to exist)."""

from __future__ import annotations

from django.http import Http404, HttpRequest

from webapp.runs.models import Run
from webapp.runs.selectors import run_get


def run_or_404(request: HttpRequest, pk: int) -> Run:
    try:
        return run_get(user=request.user, pk=pk)
    except Run.DoesNotExist:
        raise Http404("No such run") from None
