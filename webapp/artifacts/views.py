"""A run's saved models from the browser: a streamed .tar.gz of its final model or a checkpoint (other teams 404)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, StreamingHttpResponse

from webapp.accounts.models import Team
from webapp.accounts.selectors import team_scope
from webapp.artifacts.model_archive import archive_stream
from webapp.artifacts.saved_models import saved_model_get


@login_required
def run_model_download(request: HttpRequest, pk: int, name: str) -> StreamingHttpResponse:
    """A saved model (final or a checkpoint) as a .tar.gz, streamed."""
    # The runs app declares the relation (`team.runs`); artifacts reads through it without depending on that app.
    run = team_scope(Team.runs.field.model.objects.filter(pk=pk), user=request.user).first()
    if run is None:
        raise Http404("No such run")
    saved = saved_model_get(run, name)
    if saved is None:
        raise Http404("This run saved no such model")
    top = f"{run.name}-{saved.name}"
    response = StreamingHttpResponse(archive_stream(saved, top=top), content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="{top}.tar.gz"'
    return response
