"""/api/v1/evaluations: the team's evaluations with their aggregates."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from ninja import Query, Router
from pydantic import Field

from webapp.api.auth import token_of, write_required
from webapp.api.pages import PageQuery, page
from webapp.api.presenters import evaluation_out
from webapp.api.responses import answers
from webapp.api.schemas import EvaluationIn, EvaluationOut, EvaluationPage, InputSchema
from webapp.api.scope import team_environments, team_evaluations, team_version_named
from webapp.evals import selectors, services

router = Router(tags=["evaluations"])


@router.get("/evaluations", response=answers(EvaluationPage), summary="The team's evaluations, newest first")
def evaluation_list(request: HttpRequest, paging: Query[PageQuery]):
    return page(team_evaluations(request).order_by("-created_at"), paging, evaluation_out)


@router.post("/evaluations", response=answers(EvaluationOut, write=True, status=201),
             summary="Evaluate a model on one or more environments (queued on a worker)")  # fmt: skip
def evaluation_create(request: HttpRequest, body: EvaluationIn):
    token = write_required(request)
    versions = []
    for name in body.environments:
        slug, _, label = name.partition("@")
        versions.append(team_version_named(request, slug, label, field="environments"))
    evaluation = services.evaluation_create(
        team=token.team, user=token.user, model_name=body.model, versions=versions, episodes=body.episodes,
        seeds=body.seeds, k=body.k, greedy=body.greedy, temperature=body.temperature, top_p=body.top_p,
        max_turns=body.max_turns, max_tokens=body.max_tokens, name=body.name,
    )  # fmt: skip
    return 201, evaluation_out(evaluation)


@router.post("/evaluations/{evaluation_id}/cancel", response=answers(EvaluationOut, write=True),
             summary="Cancel an evaluation (what it recorded stays)")  # fmt: skip
def evaluation_cancel(request: HttpRequest, evaluation_id: int):
    token = write_required(request)
    evaluation = team_evaluations(request).filter(pk=evaluation_id).first()
    if evaluation is None:
        raise Http404("No such evaluation")
    return evaluation_out(services.evaluation_cancel(user=token.user, evaluation=evaluation))


class CompareQuery(InputSchema):
    # 18 digits at most: an id a database can hold (a longer number overflowed PostgreSQL's bigint: a 500).
    ids: str = Field(min_length=1, max_length=200, pattern=r"^[0-9]{1,18}(,[0-9]{1,18}){0,9}$",
                     description="Up to 10 evaluation ids, comma-separated")  # fmt: skip


@router.get("/evaluations/compare", response=answers(dict[str, Any]),
            summary="Evaluations side by side, episode by episode (those that differ first)")  # fmt: skip
def evaluation_compare(request: HttpRequest, query: Query[CompareQuery]):
    ids = [int(i) for i in query.ids.split(",")]
    found = {e.pk: e for e in team_evaluations(request).filter(pk__in=ids)}
    if len(found) != len(set(ids)):
        raise Http404("No such evaluation")
    compared = selectors.comparison([found[i] for i in ids])
    return {**compared, "evaluations": [evaluation_out(e) for e in compared["evaluations"]]}


@router.get("/leaderboard/{version_id}", response=answers(list[dict[str, Any]]),
            summary="Each model's best finished result on a version, one board per evaluation settings")  # fmt: skip
def leaderboard(request: HttpRequest, version_id: int):
    token = token_of(request)
    if not team_environments(request).filter(versions__pk=version_id).exists():
        raise Http404("No such environment version")
    boards = []
    for board in selectors.leaderboard(user=token.user, version_id=version_id):
        rows = [{"model": r["model"], "evaluation": r["evaluation"].pk, "result": r["result"]}
                for r in board["rows"] if r["evaluation"].team_id == token.team_id]  # fmt: skip
        if rows:
            boards.append({"settings_key": board["settings_key"], "threshold": board["threshold"],
                           "settings": board["settings"], "rows": rows})  # fmt: skip
    return boards


# After /evaluations/compare: a path segment that is not an id is not taken for one.
@router.get("/evaluations/{evaluation_id}", response=answers(EvaluationOut), summary="One evaluation")
def evaluation_show(request: HttpRequest, evaluation_id: int):
    evaluation = team_evaluations(request).filter(pk=evaluation_id).first()
    if evaluation is None:
        raise Http404("No such evaluation")
    return evaluation_out(evaluation)
