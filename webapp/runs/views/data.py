"""A run's data for its page and for scripts: downsampled metric series, episodes, the trainer's log."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse

from webapp.artifacts.layout import run_log_key
from webapp.artifacts.store import artifact_store
from webapp.core.query_params import LARGEST_STEP, float_param, int_param, text_param
from webapp.runs.models import Episode, Run
from webapp.runs.rollups import series_downsampled
from webapp.runs.selectors import metric_names
from webapp.runs.token_traces import episode_trace, trace_dict, traced_keys
from webapp.runs.views.access import run_or_404


def series_payload(run: Run, request: HttpRequest) -> dict:
    """Every requested series of a run, min/max-downsampled to at most ~2,000 points over [lo, hi]."""
    wanted = [n for n in text_param(request.GET, "names", most=5000).split(",") if n] or metric_names(run=run)
    lo = int_param(request.GET, "lo", lo=0, hi=LARGEST_STEP)
    hi = int_param(request.GET, "hi", lo=0, hi=LARGEST_STEP)
    return {name: series_downsampled(run.pk, name, lo, hi) for name in wanted}


@login_required
def run_metrics_json(request: HttpRequest, pk: int) -> JsonResponse:
    run = run_or_404(request, pk)
    last_seq = run.last_seq  # read before the points: anything newer is replayed over the socket
    series = series_payload(run, request)
    return JsonResponse({"run": run.pk, "last_seq": last_seq, "series": series})


def episode_dict(e: Episode) -> dict:
    return {
        "id": e.pk,
        "step": e.step,
        "group": e.group,
        "index": e.index_in_group,
        "reward": e.reward,
        "advantage": e.advantage,
        "num_tool_calls": e.num_tool_calls,
        "num_tool_errors": e.num_tool_errors,
        "error": e.error,
        "environment": e.environment,
        "rank": e.rank,
        "turns": e.turns,
        "prompt": e.prompt,
    }


@login_required
def run_episodes_json(request: HttpRequest, pk: int) -> JsonResponse:
    run = run_or_404(request, pk)
    episodes = Episode.objects.filter(run=run)
    step = int_param(request.GET, "step", lo=0, hi=LARGEST_STEP)
    min_reward, max_reward = float_param(request.GET, "min_reward"), float_param(request.GET, "max_reward")
    limit = int_param(request.GET, "limit", lo=1, hi=500, default=100)
    if step is not None:
        episodes = episodes.filter(step=step)
    if min_reward is not None:
        episodes = episodes.filter(reward__gte=min_reward)
    if max_reward is not None:
        episodes = episodes.filter(reward__lte=max_reward)
    if request.GET.get("errors") == "1":
        episodes = episodes.filter(Q(num_tool_errors__gt=0) | ~Q(error=""))
    environment = text_param(request.GET, "environment", most=120)
    if environment:
        episodes = episodes.filter(environment=environment)
    rows = list(episodes.order_by("-step", "group", "index_in_group")[:limit])
    traced = traced_keys(run.pk, {e.step for e in rows})
    out = [{**episode_dict(e), "traced": (e.step, e.rank, e.group, e.index_in_group) in traced} for e in rows]
    return JsonResponse({"run": run.pk, "episodes": out})


@login_required
def episode_tokens_json(request: HttpRequest, pk: int, episode_id: int) -> JsonResponse:
    """One traced episode token by token (advantage, log-probability, entropy, in the loss or not) and its turns;
    a 404 that says why for an episode of the run that was not traced."""
    run = run_or_404(request, pk)
    episode = Episode.objects.filter(run=run, pk=episode_id).first()
    if episode is None:
        return JsonResponse({"error": "no such episode in this run"}, status=404)
    trace = episode_trace(episode)
    if trace is None:
        groups = run.config.get("token_trace_groups", 1)
        which = f"episode {episode.group}.{episode.index_in_group} of step {episode.step}"
        reason = f"{which} was not traced (this run traces {groups} GRPO group(s) a step)"
        return JsonResponse({"error": reason}, status=404)
    return JsonResponse({"episode": episode_dict(episode), "trace": trace_dict(trace)})


@login_required
def run_log_view(request: HttpRequest, pk: int) -> HttpResponse:
    """The trainer log's last 20 kB, as its worker published it to the artifact store (whichever host ran it)."""
    run = run_or_404(request, pk)
    store, key = artifact_store(), run_log_key(run.pk)
    size = store.size(key)
    if size is None:
        where = f" (its worker, {run.worker_host}, publishes it as it grows)" if run.worker_host else ""
        return HttpResponse(f"No trainer log yet{where}.\n", content_type="text/plain; charset=utf-8")
    text = store.read_bytes(key, start=max(0, size - 20000)).decode(errors="replace")
    return HttpResponse(text, content_type="text/plain; charset=utf-8")
