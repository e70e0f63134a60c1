"""/api/v1/evaluations: the team's evaluations with their aggregates."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from ninja import Query, Router

from webapp.api.pages import PageQuery, page
from webapp.api.presenters import evaluation_out
from webapp.api.responses import answers
from webapp.api.schemas import EvaluationOut, EvaluationPage
from webapp.api.scope import team_evaluations

router = Router(tags=["evaluations"])


@router.get("/evaluations", response=answers(EvaluationPage), summary="The team's evaluations, newest first")
def evaluation_list(request: HttpRequest, paging: Query[PageQuery]):
    return page(team_evaluations(request).order_by("-created_at"), paging, evaluation_out)


@router.get("/evaluations/{evaluation_id}", response=answers(EvaluationOut), summary="One evaluation")
def evaluation_show(request: HttpRequest, evaluation_id: int):
    evaluation = team_evaluations(request).filter(pk=evaluation_id).first()
    if evaluation is None:
        raise Http404("No such evaluation")
    return evaluation_out(evaluation)
