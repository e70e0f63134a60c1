from __future__ import annotations

import csv
import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.accounts.models import Role
from webapp.accounts.selectors import membership_get, membership_require
from webapp.artifacts.layout import run_log
from webapp.catalog.models import EnvironmentVersion
from webapp.catalog.selectors import version_list
from webapp.core.query_params import LARGEST_ID, LARGEST_STEP, float_param, id_list_param, int_param, text_param
from webapp.evals.selectors import baseline_to_final, run_evaluations
from webapp.jobs.models import Job
from webapp.jobs.selectors import job_get
from webapp.jobs.services import job_create
from webapp.runs import comparison, services
from webapp.runs.forms import RunCreateForm
from webapp.runs.grpo import HELP, settings_flat
from webapp.runs.models import Episode, MetricPoint, Run, Status
from webapp.runs.rollups import series_downsampled
from webapp.runs.selectors import environment_activity, metric_names, metric_tails, run_get, run_list

SPARK_POINTS = 40


def _run_or_404(request: HttpRequest, pk: int) -> Run:
    try:
        return run_get(user=request.user, pk=pk)
    except Run.DoesNotExist:
        raise Http404("No such run") from None


@login_required
def run_list_view(request: HttpRequest) -> HttpResponse:
    runs = run_list(user=request.user)
    status, env, owner, tag, q = (text_param(request.GET, k) for k in ("status", "env", "owner", "tag", "q"))
    if status:
        runs = runs.filter(status=status)
    if env:
        runs = runs.filter(env_version__environment__slug=env)
    if owner:
        runs = runs.filter(created_by__username=owner)
    if tag:
        runs = runs.filter(tags__icontains=f'"{tag}"')
    if q:
        runs = runs.filter(Q(name__icontains=q) | Q(model_name__icontains=q))
    page = Paginator(runs, 25).get_page(request.GET.get("page"))
    tails = metric_tails(run_ids=[run.pk for run in page], name="reward", last=SPARK_POINTS)
    for run in page:
        points = tails[run.pk]
        run.spark = json.dumps([[step, value] for step, value in points])  # runs_list.js draws it, live
        run.last_reward = points[-1][1] if points else None
    visible = run_list(user=request.user)
    context = {
        "page": page,
        "filters": {"status": status, "env": env, "owner": owner, "tag": tag, "q": q},
        "statuses": Status.choices,
        "envs": sorted(set(visible.values_list("env_version__environment__slug", flat=True))),
        "owners": sorted({u for u in visible.values_list("created_by__username", flat=True) if u}),
        "query": request.GET.urlencode(),
    }
    template = "runs/_run_rows.html" if request.htmx else "runs/run_list.html"
    return render(request, template, context)


def _versions_for(request: HttpRequest):
    return version_list(user=request.user)


def _initial_from_job(request: HttpRequest) -> dict | None:
    """ "Change and try again" after a refused pre-flight: the form as it was sent (a prompts file is not kept
    as a file: its rows come back as lines when they are plain prompts)."""
    if request.method != "GET" or not request.GET.get("from_job"):
        return None
    try:
        job = job_get(user=request.user, pk=int_param(request.GET, "from_job", lo=1, hi=LARGEST_ID))
    except Job.DoesNotExist:
        return None
    p = job.params
    initial = {**p.get("config", {}), "env_version": str(p.get("version")), "model_name": p.get("model_name"),
               "replicas": p.get("replicas"), "provider": p.get("provider"), "tags": ", ".join(p.get("tags") or []),
               "trust_override_reason": p.get("trust_override_reason", ""),
               "transcript_policy": p.get("transcript_policy")}  # fmt: skip
    if initial.get("advanced"):
        initial["advanced"] = json.dumps(initial["advanced"], indent=1)
    versions = EnvironmentVersion.objects.select_related("environment").in_bulk(
        [pk for pk, _ in p.get("mixture") or []]
    )
    initial["mixture"] = "\n".join(f"{versions[pk].environment.slug}@{versions[pk].label} {weight:g}"
                                   for pk, weight in p.get("mixture") or [] if pk in versions)  # fmt: skip
    initial["env_weight"] = p.get("env_weight", 1.0)
    rows = p.get("prompts") or []
    if all(isinstance(r, str) or set(r) == {"prompt"} for r in rows):
        initial["prompts"] = "\n".join(r if isinstance(r, str) else r["prompt"] for r in rows)
    return initial


def _initial_from_saved_model(request: HttpRequest) -> dict | None:
    """ "Train from this checkpoint": the run's settings, with its saved model as the model to start from."""
    if request.method != "GET" or not request.GET.get("from_run"):
        return None
    run = _run_or_404(request, int_param(request.GET, "from_run", lo=1, hi=LARGEST_ID))
    name = text_param(request.GET, "model", most=40) or "final"
    config = dict(run.config)
    if config.get("advanced"):
        config["advanced"] = json.dumps(config["advanced"], indent=1)
    return {**config, "env_version": str(run.env_version_id), "model_name": f"run:{run.pk}/{name}",
            "provider": run.provider, "tags": ", ".join(run.tags),
            "transcript_policy": run.transcript_policy}  # fmt: skip


@login_required
def run_create_view(request: HttpRequest) -> HttpResponse:
    if request.team is None:
        raise Http404("You are in no team")
    membership_require(user=request.user, team=request.team, role=Role.MEMBER)
    versions = list(_versions_for(request))
    form = RunCreateForm(request.POST or None, request.FILES or None, versions=versions,
                         initial=_initial_from_job(request) or _initial_from_saved_model(request))  # fmt: skip
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        version = form.versions[data["env_version"]]
        try:
            prompts = [line for line in data["prompts"].splitlines() if line.strip()]
            if data.get("prompts_file"):
                prompts = services.prompts_from_jsonl(data["prompts_file"].read().decode("utf-8", errors="replace"))
            params = {
                "version": version.pk, "model_name": data["model_name"], "prompts": prompts,
                "config": form.grpo_config(), "replicas": data["replicas"], "provider": data["provider"],
                "tags": data["tags"], "trust_override_reason": data["trust_override_reason"],
                "transcript_policy": data["transcript_policy"] or "all",
                "mixture": [[v.pk, w] for v, w in data["mixture"]], "env_weight": data["env_weight"] or 1.0,
            }  # fmt: skip
            # The cheap checks answer on the form at once; the pre-flight (an environment started, a tokenizer
            # loaded) is a job on a worker, followed live on its page, which goes on to the run when it is queued.
            services.run_create(team=request.team, user=request.user, env_version=version, check_only=True,
                                **{k: v for k, v in params.items() if k not in ("version", "mixture")},
                                mixture=data["mixture"])  # fmt: skip
        except ValidationError as exc:
            for field, errors in exc.message_dict.items() if hasattr(exc, "error_dict") else [(None, exc.messages)]:
                form.add_error(field if field in form.fields else None, errors)
        else:
            job = job_create(team=request.team, user=request.user, kind=Job.Kind.RUN_CREATE, params=params)
            job.params["back"] = f"{reverse('runs:run-create')}?from_job={job.pk}"
            job.save(update_fields=["params"])
            return redirect(job.get_absolute_url())
    from webapp.artifacts.model_names import warmstarted_models
    from webapp.artifacts.saved_models import team_saved_models

    model_choices = (
        [("tiny-local", "built on this machine")]
        + [(name, f"warm-started on {version}") for name, version in warmstarted_models(versions)]
        + team_saved_models(team=request.team)
    )
    return render(request, "runs/run_form.html", {"form": form, "model_choices": model_choices},
                  status=400 if form.errors else 200)  # fmt: skip


@login_required
def run_detail_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_or_404(request, pk)
    membership = membership_get(user=request.user, team=run.team)
    names = metric_names(run=run)
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name.split("/")[0] if "/" in name else "train", []).append(name)
    config_rows = [(k, v, HELP.get(k, "")) for k, v in settings_flat(run.config).items()]
    from webapp.artifacts.saved_models import saved_models

    children = list(run_list(user=request.user).filter(parent=run).order_by("created_at")[:50])
    return render(
        request,
        "runs/run_detail.html",
        {
            "run": run,
            "can_act": membership is not None and membership.allows(Role.MEMBER),
            "config_rows": config_rows,
            "saved_models": saved_models(run),
            "environment_activity": environment_activity(run=run) if run.environments else [],
            "children": children,
            "parent": run_list(user=request.user).filter(pk=run.parent_id).first() if run.parent_id else None,
            "metric_groups": groups,
            "evaluations": run_evaluations(run=run),
            "eval_summary": baseline_to_final(run=run),
            "boot": {"run": run.pk, "maxSteps": run.max_steps, "status": run.status, "step": run.step},
        },
    )


def series_payload(run: Run, request: HttpRequest) -> dict:
    """Every requested series of a run, min/max-downsampled to at most ~2,000 points over [lo, hi]."""
    wanted = [n for n in text_param(request.GET, "names", most=5000).split(",") if n] or metric_names(run=run)
    lo = int_param(request.GET, "lo", lo=0, hi=LARGEST_STEP)
    hi = int_param(request.GET, "hi", lo=0, hi=LARGEST_STEP)
    return {name: series_downsampled(run.pk, name, lo, hi) for name in wanted}


@login_required
def run_metrics_json(request: HttpRequest, pk: int) -> JsonResponse:
    run = _run_or_404(request, pk)
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
    run = _run_or_404(request, pk)
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
    return JsonResponse({"run": run.pk, "episodes": [episode_dict(e) for e in rows]})


@login_required
def run_log_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_or_404(request, pk)
    path = run_log(run.pk)
    try:
        text = path.read_text(errors="replace")[-20000:]
    except OSError:
        text = ""
    return HttpResponse(text, content_type="text/plain; charset=utf-8")


@login_required
def run_model_download(request: HttpRequest, pk: int, name: str) -> StreamingHttpResponse:
    """A saved model (final or a checkpoint) as a .tar.gz, streamed."""
    from webapp.artifacts.model_archive import archive_stream
    from webapp.artifacts.saved_models import saved_model_get

    run = _run_or_404(request, pk)
    saved = saved_model_get(run, name)
    if saved is None:
        raise Http404("This run saved no such model")
    top = f"{run.name}-{saved.name}"
    response = StreamingHttpResponse(archive_stream(saved, top=top), content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="{top}.tar.gz"'
    return response


def _act(request: HttpRequest, pk: int, action) -> HttpResponse:
    run = _run_or_404(request, pk)
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


def _compare_runs(request: HttpRequest) -> list[Run]:
    # ?runs=12,15,19 (a shareable URL) or ?runs=12&runs=15 (the runs list's checkboxes)
    ids = id_list_param(request.GET.getlist("runs"), "runs", most=comparison.MOST_RUNS)
    return comparison.runs_for_compare(user=request.user, ids=ids)


@login_required
def compare_view(request: HttpRequest) -> HttpResponse:
    runs = _compare_runs(request)
    names = sorted({n for run in runs for n in metric_names(run=run)})
    return render(
        request,
        "runs/compare.html",
        {
            "runs": runs,
            "ids": ",".join(str(r.pk) for r in runs),
            "summary": [comparison.summary_row(r) for r in runs],
            "summary_keys": list(comparison.summary_row(runs[0]).keys())[3:],
            "diff": comparison.config_diff(runs),
            "rows": comparison.shared_rows(runs),
            "metric_names": names,
            "boot": {"runs": [{"id": r.pk, "name": r.name} for r in runs], "names": names},
        },
    )


@login_required
def compare_metrics_json(request: HttpRequest) -> JsonResponse:
    runs = _compare_runs(request)
    return JsonResponse({"runs": {r.pk: series_payload(r, request) for r in runs}})


@login_required
def compare_summary_csv(request: HttpRequest) -> HttpResponse:
    runs = _compare_runs(request)
    rows = [comparison.summary_row(r) for r in runs]
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="trainyard-summary.csv"'
    writer = csv.DictWriter(response, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return response


class _Echo:
    def write(self, value: str) -> str:
        return value


@login_required
def compare_metrics_csv(request: HttpRequest) -> StreamingHttpResponse:
    """Every raw point of the runs (or of ?names=…), streamed: long runs export without loading all in memory."""
    runs = _compare_runs(request)
    names = [n for n in text_param(request.GET, "names", most=5000).split(",") if n]
    points = MetricPoint.objects.filter(run__in=runs).order_by("run_id", "name", "step")
    if names:
        points = points.filter(name__in=names)
    run_names = {r.pk: r.name for r in runs}
    writer = csv.writer(_Echo())

    def rows():
        yield writer.writerow(["run_id", "run", "metric", "step", "value", "wall_time"])
        for run_id, name, step, value, wall in points.values_list(
            "run_id", "name", "step", "value", "wall_time"
        ).iterator(chunk_size=5000):
            yield writer.writerow([run_id, run_names[run_id], name, step, value, wall])

    response = StreamingHttpResponse(rows(), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="trainyard-metrics.csv"'
    return response
