"""/api/v1/environments: the team's environments and those shared with every team, with their versions."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from ninja import Query, Router
from pydantic import Field

from webapp.api.pages import PageQuery, page
from webapp.api.presenters import environment_out
from webapp.api.responses import answers
from webapp.api.schemas import EnvironmentOut, EnvironmentPage, InputSchema
from webapp.api.scope import team_environments

router = Router(tags=["environments"])


class EnvironmentFilters(InputSchema):
    search: str = Field("", max_length=100)
    tag: str = Field("", max_length=50)


@router.get("/environments", response=answers(EnvironmentPage), summary="Environments the team may train on")
def environment_list(request: HttpRequest, filters: Query[EnvironmentFilters], paging: Query[PageQuery]):
    rows = team_environments(request, search=filters.search, tag=filters.tag).prefetch_related("versions")
    return page(rows, paging, environment_out)


@router.get("/environments/{environment_id}", response=answers(EnvironmentOut), summary="One environment")
def environment_show(request: HttpRequest, environment_id: int):
    environment = team_environments(request).filter(pk=environment_id).first()
    if environment is None:
        raise Http404("No such environment")
    return environment_out(environment)
