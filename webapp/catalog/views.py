from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from envs.catalog_cards import snapshot_json
from webapp.accounts.models import Role
from webapp.accounts.selectors import membership_get, membership_require, team_list_for_user, team_scope
from webapp.catalog import selectors, services
from webapp.catalog.catalog_import import catalog_export
from webapp.catalog.forms import (
    ActionForm,
    AssetUploadForm,
    CatalogImportForm,
    EnvironmentCreateForm,
    VersionSettingsForm,
    VersionSourceForm,
)
from webapp.catalog.models import Environment, EnvironmentVersion
from webapp.catalog.trust import trust_check_request
from webapp.core.query_params import int_param, text_param
from webapp.jobs.models import Job
from webapp.jobs.services import job_create


def _environment_or_404(request: HttpRequest, pk: int) -> Environment:
    try:
        return selectors.environment_get(user=request.user, pk=pk)
    except Environment.DoesNotExist:
        raise Http404("No such environment") from None


def _version_or_404(request: HttpRequest, pk: int, version_pk: int) -> EnvironmentVersion:
    try:
        return selectors.version_get(user=request.user, environment_pk=pk, pk=version_pk)
    except EnvironmentVersion.DoesNotExist:
        raise Http404("No such version") from None


def _apply_errors(form, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            if field in form.errors and field in form.fields:
                continue  # already on the form (a settings line the form itself refused)
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def _back_to_version(request: HttpRequest, form, version: EnvironmentVersion, *, failed: str, saved: str):
    """A version form posted from the environment page: its errors (or its success) flashed, back to the version."""
    if form.errors:
        errors = "; ".join(f"{field}: {' '.join(messages_)}" for field, messages_ in form.errors.items())
        messages.error(request, f"{failed}: {errors}")
    else:
        messages.success(request, saved)
    return redirect(f"{reverse('catalog:environment-detail', args=[version.environment_id])}#version-{version.pk}")


@login_required
def environment_list(request: HttpRequest) -> HttpResponse:
    search, tag = text_param(request.GET, "q"), text_param(request.GET, "tag")
    page = Paginator(selectors.environment_list(user=request.user, search=search, tag=tag), 25).get_page(
        request.GET.get("page")
    )
    context = {"page": page, "q": search, "tag": tag, "tags": selectors.tag_list(user=request.user)}
    template = "catalog/_environment_rows.html" if request.htmx else "catalog/environment_list.html"
    return render(request, template, context)


@login_required
def environment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    environment = _environment_or_404(request, pk)
    membership = membership_get(user=request.user, team=environment.team)
    versions = environment.versions.select_related("created_by")
    return render(
        request,
        "catalog/environment_detail.html",
        {
            "environment": environment,
            "versions": versions,
            "can_edit": membership is not None and membership.allows(Role.MEMBER),
            "can_test": any(m.allows(Role.MEMBER) for m in request.user.memberships.all()),
            "runs_by_version": {
                vid: {"runs": runs, "accepted": selectors.accepted_calls(runs)}
                for vid, runs in _runs_by_version(request, versions).items()
            },
            "asset_form": AssetUploadForm(),
            "settings_forms": {
                v.pk: VersionSettingsForm(initial=VersionSettingsForm.initial_for(v.settings))
                for v in versions
                if not v.is_frozen
            },
        },
    )


@login_required
@require_POST
def version_settings(request: HttpRequest, pk: int, version_pk: int) -> HttpResponse:
    version = _version_or_404(request, pk, version_pk)
    membership_require(user=request.user, team=version.environment.team, role=Role.MEMBER)
    form = VersionSettingsForm(request.POST)
    if form.is_valid():
        try:
            services.version_settings_update(version=version, user=request.user, settings=form.settings())
        except ValidationError as exc:
            _apply_errors(form, exc)
    return _back_to_version(request, form, version, failed=f"Settings of {version} not saved",
                            saved=f"Saved the settings of {version}.")  # fmt: skip


def _runs_by_version(request: HttpRequest, versions) -> dict[int, list]:
    """Runs that used each version, as far as the reader may see them. The runs app declares the relation
    (`version.runs`); the catalog reads it without depending on that app."""
    runs = EnvironmentVersion.runs.field.model.objects.filter(env_version__in=versions)
    by_version: dict[int, list] = {}
    for run in team_scope(runs, user=request.user).select_related("created_by").order_by("-created_at")[:200]:
        by_version.setdefault(run.env_version_id, []).append(run)
    return by_version


@login_required
def environment_create(request: HttpRequest) -> HttpResponse:
    if request.team is None:
        raise Http404("You are in no team")
    membership_require(user=request.user, team=request.team, role=Role.MEMBER)
    form = EnvironmentCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():  # (the catalog form posts to catalog_import_start)
        try:
            environment = services.environment_create(team=request.team, user=request.user, **form.service_arguments())
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            messages.success(request, f"Added {environment.name} {form.cleaned_data['label']}.")
            return redirect("catalog:environment-detail", pk=environment.pk)
    return render(request, "catalog/environment_form.html", {"form": form, "catalog_form": CatalogImportForm()},
                  status=400 if form.errors else 200)  # fmt: skip


@login_required
def version_create(request: HttpRequest, pk: int) -> HttpResponse:
    environment = _environment_or_404(request, pk)
    membership_require(user=request.user, team=environment.team, role=Role.MEMBER)
    form = VersionSourceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            version = services.version_add(environment=environment, user=request.user, **form.service_arguments())
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            messages.success(request, f"Added version {version.label}.")
            return redirect("catalog:environment-detail", pk=environment.pk)
    return render(
        request,
        "catalog/version_form.html",
        {"form": form, "environment": environment},
        status=400 if form.errors else 200,
    )


@login_required
def version_testdrive(request: HttpRequest, pk: int, version_pk: int) -> HttpResponse:
    version = _version_or_404(request, pk, version_pk)
    # Test driving starts servers: members of any team that can see the version, not viewers.
    if not any(m.allows(Role.MEMBER) for m in request.user.memberships.all()):
        membership_require(user=request.user, team=version.environment.team, role=Role.MEMBER)
    tools = version.tools or []
    tool_name = request.POST.get("tool") or request.GET.get("tool") or (tools[0]["name"] if tools else "")
    try:
        tool = services.version_tool(version, tool_name).as_dict()  # as the model meets it: fixed fields hidden
    except ValidationError:
        raise Http404("This version has no such tool") from None
    form = ActionForm(request.POST or None, tool=tool)
    job = drive = None
    if request.method == "POST" and form.is_valid():
        # Provisioning takes seconds to minutes: a worker does it (a job), this page follows it.
        from webapp.jobs.models import Job
        from webapp.jobs.services import job_create

        provider = request.POST.get("provider") or None
        if provider not in (None, "process", "docker", "url"):
            form.add_error(None, f"unknown provider {provider[:40]!r}; use process, docker or url")
        else:
            params = {"version": version.pk, "tool": tool["name"], "arguments": form.action(), "provider": provider,
                      "seed": form.cleaned_data.get("seed")}  # fmt: skip
            team = request.team or request.user.memberships.select_related("team").first().team
            job = job_create(team=team, user=request.user, kind=Job.Kind.TESTDRIVE, params=params)
            return redirect(f"{request.path}?tool={tool['name']}&job={job.pk}")
    elif request.GET.get("job"):
        from webapp.core.query_params import LARGEST_ID, int_param
        from webapp.jobs.models import Job
        from webapp.jobs.selectors import job_get

        try:
            job = job_get(user=request.user, pk=int_param(request.GET, "job", lo=1, hi=LARGEST_ID))
        except Job.DoesNotExist:
            raise Http404("No such test drive") from None
        drive = job.result.get("drive")  # errors, if any, show in the job's box
    return render(
        request,
        "catalog/testdrive.html",
        {"version": version, "environment": version.environment, "form": form, "tool": tool, "tools": tools,
         "drive": drive, "job": job, "providers": ["process", "docker", "url"]},
        status=400 if form.errors else 200,
    )  # fmt: skip


@login_required
@require_POST
def version_trust_check(request: HttpRequest, pk: int, version_pk: int) -> HttpResponse:
    version = _version_or_404(request, pk, version_pk)
    # Checks are the owning team's record of its version: others may view and test-drive a shared one, not queue
    # work on its behalf.
    membership_require(user=request.user, team=version.environment.team, role=Role.MEMBER)
    trust_check_request(version=version)
    messages.success(request, f"Trust checks of {version} queued.")
    return redirect("catalog:environment-detail", pk=pk)


@login_required
@require_POST
def catalog_import_start(request: HttpRequest) -> HttpResponse:
    """Every card (or the chosen ones) of an OpenEnv catalog, added by a worker: a job whose page shows each card's
    phase, then the catalog."""
    if request.team is None:
        raise Http404("You are in no team")
    membership_require(user=request.user, team=request.team, role=Role.MEMBER)
    form = CatalogImportForm(request.POST)
    if not form.is_valid():
        return render(request, "catalog/environment_form.html", {"form": EnvironmentCreateForm(),
                      "catalog_form": form}, status=400)  # fmt: skip
    job = job_create(team=request.team, user=request.user, kind=Job.Kind.CATALOG_IMPORT,
                     params={**form.job_params(), "back": reverse("catalog:environment-create")})  # fmt: skip
    return redirect(job.get_absolute_url())


def _catalog_source_or_404(request: HttpRequest, pk: int):
    environment = _environment_or_404(request, pk)
    membership_require(user=request.user, team=environment.team, role=Role.MEMBER)
    if environment.catalog_source is None:
        raise Http404("This environment was not taken from a catalog")
    return environment, environment.catalog_source


@login_required
@require_POST
def catalog_check(request: HttpRequest, pk: int) -> HttpResponse:
    """Read the environment's catalog again (a worker's job) and keep OpenEnv's comparison for its page."""
    environment, source = _catalog_source_or_404(request, pk)
    back = reverse("catalog:environment-detail", args=[environment.pk]) + "#catalog"
    job = job_create(team=environment.team, user=request.user, kind=Job.Kind.CATALOG_IMPORT,
                     params={"source": source.pk, "check": True, "back": back})  # fmt: skip
    return redirect(job.get_absolute_url())


@login_required
@require_POST
def catalog_update(request: HttpRequest, pk: int) -> HttpResponse:
    """Add what the last check offered: new versions of changed folders, and cards the team has not taken."""
    environment, source = _catalog_source_or_404(request, pk)
    offered = [row["name"] for row in (source.last_check or {}).get("changes", []) if row.get("offer")]
    if not offered:
        messages.error(request, "The last check offered nothing to add; check for updates first.")
        return redirect("catalog:environment-detail", pk=environment.pk)
    back = reverse("catalog:environment-detail", args=[environment.pk]) + "#catalog"
    job = job_create(team=environment.team, user=request.user, kind=Job.Kind.CATALOG_IMPORT,
                     params={"source": source.pk, "only": offered, "back": back})  # fmt: skip
    return redirect(job.get_absolute_url())


@login_required
def catalog_json(request: HttpRequest) -> HttpResponse:
    """The team's catalog-imported environments as an OpenEnv catalog snapshot (its loader and schema accept it).
    `?team=SLUG` (default: the reader's first team with one), `?source=ID` (default: the latest source)."""
    teams = team_list_for_user(user=request.user)
    slug = text_param(request.GET, "team", most=100)
    source_id = int_param(request.GET, "source", lo=1, hi=2**62) if request.GET.get("source") else None
    candidates = teams.filter(slug=slug) if slug else teams
    team = next((t for t in candidates if t.catalog_sources.filter(environments__isnull=False).exists()), None)
    if team is None:
        return JsonResponse({"error": "No team of yours has environments taken from a catalog."}, status=404)
    source = team.catalog_sources.filter(pk=source_id).first() if source_id else None
    if source_id and source is None:
        return JsonResponse({"error": f"{team.name} has no catalog source {source_id}."}, status=404)
    try:
        snapshot = catalog_export(team=team, source=source)
    except ValidationError as exc:
        return JsonResponse({"error": " ".join(exc.messages)}, status=404)
    response = JsonResponse(snapshot_json(snapshot), json_dumps_params={"indent": 2, "sort_keys": True})
    response["Content-Disposition"] = f'inline; filename="{team.slug}-catalog.json"'
    return response


@login_required
@require_POST
def version_asset_upload(request: HttpRequest, pk: int, version_pk: int) -> HttpResponse:
    """Give a version a data file from the browser (stored by content in the artifact store, read-only to servers)."""
    import tempfile
    from pathlib import Path

    from webapp.catalog.version_assets import version_asset_add

    version = _version_or_404(request, pk, version_pk)
    membership_require(user=request.user, team=version.environment.team, role=Role.MEMBER)
    form = AssetUploadForm(request.POST, request.FILES)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / Path(upload.name).name
            with path.open("wb") as handle:
                for chunk in upload.chunks():
                    handle.write(chunk)
            try:
                version_asset_add(version=version, user=request.user, path=path,
                                  variable=form.cleaned_data.get("variable") or "")  # fmt: skip
            except ValidationError as exc:
                _apply_errors(form, exc)
    return _back_to_version(request, form, version, failed=f"No asset added to {version}",
                            saved=f"Added the data file to {version}.")  # fmt: skip
