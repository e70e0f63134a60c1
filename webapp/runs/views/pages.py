"""The runs pages: the list (filters, live sparklines), the form (cheap checks at once, the pre-flight as a job),
the run page."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from webapp.accounts.models import Role
from webapp.accounts.selectors import membership_get, membership_require
from webapp.catalog.models import EnvironmentVersion
from webapp.catalog.selectors import version_list
from webapp.core.query_params import LARGEST_ID, int_param, text_param
from webapp.evals.selectors import baseline_to_final, run_evaluations
from webapp.jobs.models import Job
from webapp.jobs.selectors import job_get
from webapp.jobs.services import job_create
from webapp.runs.forms import RunCreateForm
from webapp.runs.grpo import HELP, settings_flat
from webapp.runs.models import Status
from webapp.runs.selectors import environment_activity, metric_tails, run_list
from webapp.runs.spec import RunSpec, prompts_from_jsonl, run_spec_check
from webapp.runs.views.access import run_or_404

SPARK_POINTS = 40


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
    # Alerts raised on each run (the alerts app's rows, counted through their relation: runs never imports it).
    runs = runs.annotate(alert_count=Count("alerts", distinct=True)).order_by("-created_at")
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
    run = run_or_404(request, int_param(request.GET, "from_run", lo=1, hi=LARGEST_ID))
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
                prompts = prompts_from_jsonl(data["prompts_file"].read().decode("utf-8", errors="replace"))
            spec = RunSpec(
                env_version=version, model_name=data["model_name"], prompts=prompts, config=form.grpo_config(),
                replicas=data["replicas"], provider=data["provider"], tags=data["tags"],
                trust_override_reason=data["trust_override_reason"],
                transcript_policy=data["transcript_policy"] or "all", mixture=data["mixture"],
                env_weight=data["env_weight"] or 1.0,
            )  # fmt: skip
            # The cheap checks answer on the form at once; the pre-flight (an environment started, a tokenizer
            # loaded) is a job on a worker, followed live on its page, which goes on to the run when it is queued.
            run_spec_check(spec, team=request.team, user=request.user)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items() if hasattr(exc, "error_dict") else [(None, exc.messages)]:
                form.add_error(field if field in form.fields else None, errors)
        else:
            params = spec.as_params()
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
    run = run_or_404(request, pk)
    membership = membership_get(user=request.user, team=run.team)
    config_rows = [(k, v, HELP.get(k, "")) for k, v in settings_flat(run.config).items()]
    from webapp.artifacts.saved_models import saved_models

    children = list(run_list(user=request.user).filter(parent=run).order_by("created_at")[:50])
    evaluations = run_evaluations(run=run)
    # The held-out chart links each of its points to the evaluation it draws.
    heldout = [{"step": e.step, "url": e.get_absolute_url(), "status": e.status} for e in evaluations]
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
            "evaluations": evaluations,
            "eval_summary": baseline_to_final(run=run),
            "boot": {
                "run": run.pk,
                "maxSteps": run.max_steps,
                "status": run.status,
                "step": run.step,
                "evaluations": heldout,
            },
        },
    )
