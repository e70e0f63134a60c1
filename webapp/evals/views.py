"""Evaluation pages: the list and the form, one evaluation (live progress, cancel, aggregates, episodes), the
comparison of several, and the leaderboard of a version. Every read goes through the team-scoped selectors."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts.models import Role
from webapp.accounts.selectors import membership_get, membership_require
from webapp.catalog.selectors import version_list
from webapp.core.query_params import id_list_param, text_param
from webapp.evals import selectors, services
from webapp.evals.forms import EvaluationCreateForm
from webapp.evals.models import EvalEpisode, Evaluation

COMPARE_MOST = 6


def _evaluation_or_404(request: HttpRequest, pk: int) -> Evaluation:
    try:
        return selectors.evaluation_get(user=request.user, pk=pk)
    except Evaluation.DoesNotExist:
        raise Http404("No such evaluation") from None


def _versions_for(request: HttpRequest):
    return version_list(user=request.user)


@login_required
def evaluation_list_view(request: HttpRequest) -> HttpResponse:
    evaluations = selectors.evaluation_list(user=request.user, standalone_only=True)[:200]
    versions = list(_versions_for(request))
    return render(request, "evals/evaluation_list.html", {"evaluations": evaluations, "versions": versions})


@login_required
def evaluation_create_view(request: HttpRequest) -> HttpResponse:
    if request.team is None:
        raise Http404("You are in no team")
    membership_require(user=request.user, team=request.team, role=Role.MEMBER)
    versions = list(_versions_for(request))
    initial = {"model_name": text_param(request.GET, "model", most=300) or "tiny-local"}
    form = EvaluationCreateForm(request.POST or None, versions=versions, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            evaluation = services.evaluation_create(
                team=request.team, user=request.user, model_name=data["model_name"],
                versions=[form.version_map[pk] for pk in data["versions"]], episodes=data["episodes"],
                seed_start=data["seed_start"], seeds=data["seeds"],
                prompts=[line for line in data["prompts"].splitlines() if line.strip()], k=data["k"],
                greedy=data["greedy"], temperature=data["temperature"], top_p=data["top_p"],
                max_turns=data["max_turns"], max_tokens=data["max_tokens"], name=data["name"],
            )  # fmt: skip
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            return redirect(evaluation.get_absolute_url())
    from webapp.artifacts.saved_models import team_saved_models

    choices = [("tiny-local", "built on this machine"), *team_saved_models(team=request.team)]
    return render(request, "evals/evaluation_form.html", {"form": form, "model_choices": choices},
                  status=400 if form.errors else 200)  # fmt: skip


EPISODES_PER_PAGE = 50


@login_required
def evaluation_detail_view(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = _evaluation_or_404(request, pk)
    membership = membership_get(user=request.user, team=evaluation.team)
    differing_first = text_param(request.GET, "filter", most=20)
    episodes = EvalEpisode.objects.filter(evaluation=evaluation).order_by("environment", "seed", "sample")
    if differing_first == "failed":
        episodes = episodes.filter(success=False)
    # 50 a page: a 512-episode evaluation is eleven short pages, not one 17,000 px table.
    page = Paginator(episodes, EPISODES_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "evals/evaluation_detail.html", {
        "evaluation": evaluation, "summary": selectors.evaluation_summary(evaluation),
        "can_act": membership is not None and membership.allows(Role.MEMBER), "episodes": page,
        "filter": differing_first,
    })  # fmt: skip


@login_required
def evaluation_summary_json(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(selectors.evaluation_summary(_evaluation_or_404(request, pk)))


@login_required
def evaluation_episode_view(request: HttpRequest, pk: int, episode_id: int) -> HttpResponse:
    evaluation = _evaluation_or_404(request, pk)
    episode = EvalEpisode.objects.filter(evaluation=evaluation, pk=episode_id).first()
    if episode is None:
        raise Http404("No such episode")
    return render(request, "evals/episode.html", {"evaluation": evaluation, "episode": episode})


@login_required
@require_POST
def evaluation_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = _evaluation_or_404(request, pk)
    try:
        services.evaluation_cancel(user=request.user, evaluation=evaluation)
    except ValidationError as exc:
        return HttpResponse(" ".join(exc.messages), status=400)
    return redirect(evaluation.get_absolute_url())


@login_required
def evaluation_compare_view(request: HttpRequest) -> HttpResponse:
    ids = id_list_param(request.GET.getlist("ids"), "ids", most=COMPARE_MOST)
    found = {e.pk: e for e in selectors.evaluation_list(user=request.user).filter(pk__in=ids)}
    evaluations = [found[i] for i in ids if i in found]
    if len(evaluations) < 2:
        return HttpResponse("Choose two to six of your evaluations to compare (?ids=1,2).", status=400)
    summaries = [selectors.evaluation_summary(e) for e in evaluations]
    return render(request, "evals/compare.html", {"comparison": selectors.comparison(evaluations),
                                                  "summaries": summaries})  # fmt: skip


@login_required
def leaderboard_view(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _versions_for(request).filter(pk=version_id).first()
    if version is None:
        raise Http404("No such environment version")
    boards = selectors.leaderboard(user=request.user, version_id=version.pk)
    return render(request, "evals/leaderboard.html", {"version": version, "boards": boards})
