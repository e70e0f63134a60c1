"""The team's alert settings page (channels, rules, deliveries) and a run's mute switches."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts.models import Role
from webapp.accounts.selectors import membership_get, membership_require
from webapp.alerts import selectors, services
from webapp.alerts.conditions import BUILTIN_RULES
from webapp.alerts.forms import ChannelForm, RuleForm
from webapp.alerts.models import AlertChannel, AlertRule
from webapp.core.query_params import text_param
from webapp.runs.models import Run
from webapp.runs.views.access import run_or_404


def _errors_into(form, exc: ValidationError) -> None:
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)


@login_required
def alerts_view(request: HttpRequest) -> HttpResponse:
    team = request.team
    if team is None:
        raise Http404("You are in no team")
    membership = membership_get(user=request.user, team=team)
    can_edit = membership is not None and membership.allows(Role.MEMBER)
    runs = list(Run.objects.filter(team=team).order_by("-created_at")[:100])
    channel_form, rule_form = ChannelForm(prefix="channel"), RuleForm(prefix="rule", runs=runs)
    status = 200
    if request.method == "POST":
        membership_require(user=request.user, team=team, role=Role.MEMBER)
        action = request.POST.get("action")
        try:
            if action == "channel":
                channel_form = ChannelForm(request.POST, prefix="channel")
                if channel_form.is_valid():
                    services.channel_add(team=team, **channel_form.cleaned_data)
                    return redirect("alerts:alerts")
            elif action == "rule":
                rule_form = RuleForm(request.POST, prefix="rule", runs=runs)
                if rule_form.is_valid():
                    data = {**rule_form.cleaned_data, "run": rule_form.runs.get(rule_form.cleaned_data["run"])}
                    services.rule_add(team=team, user=request.user, **data)
                    return redirect("alerts:alerts")
            elif action in ("delete-channel", "delete-rule"):
                model = AlertChannel if action == "delete-channel" else AlertRule
                model.objects.filter(team=team, pk=text_param(request.POST, "id", most=20) or 0).delete()
                return redirect("alerts:alerts")
        except ValidationError as exc:
            _errors_into(channel_form if action == "channel" else rule_form, exc)
        status = 400
    return render(request, "alerts/alerts.html", {
        "team": team, "can_edit": can_edit, "channel_form": channel_form, "rule_form": rule_form,
        "channels": selectors.team_channels(team_id=team.pk), "rules": selectors.team_rules(team_id=team.pk),
        "deliveries": selectors.team_deliveries(team_id=team.pk), "builtin": BUILTIN_RULES,
    }, status=status)  # fmt: skip


@login_required
@require_POST
def run_mute_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = run_or_404(request, pk)
    membership_require(user=request.user, team=run.team, role=Role.MEMBER)
    rule = text_param(request.POST, "rule", most=40)
    try:
        services.mute_set(run=run, user=request.user, rule_key=rule, muted=request.POST.get("muted") == "1")
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return redirect(f"{run.get_absolute_url()}#alerts")


@login_required
def run_alerts_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page's Alerts card (fetched by the page, again whenever an alert arrives live)."""
    run = run_or_404(request, pk)
    membership = membership_get(user=request.user, team=run.team)
    return render(request, "alerts/_run_alerts.html", {
        "run": run, "alerts": selectors.run_alerts(run=run), "rules": selectors.run_rules(run=run),
        "can_act": membership is not None and membership.allows(Role.MEMBER),
    })  # fmt: skip
