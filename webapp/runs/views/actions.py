"""What a member does to a run from its page: cancel, clone, resume."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from webapp.runs import services
from webapp.runs.views.access import run_or_404


def _act(request: HttpRequest, pk: int, action) -> HttpResponse:
    run = run_or_404(request, pk)
    try:
        result = action(run=run, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(run.get_absolute_url())
    return redirect(result.get_absolute_url())


@login_required
@require_POST
def run_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(request, pk, services.run_request_cancel)


@login_required
@require_POST
def run_clone_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(request, pk, services.run_clone)


@login_required
@require_POST
def run_resume_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(request, pk, services.run_resume)
