"""Actions on alerts: a team's channels and rules, a rule muted or unmuted on one run."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator, URLValidator

from webapp.accounts.models import Team
from webapp.alerts.conditions import BUILTIN_RULES, STALLED_RULE_KEY
from webapp.alerts.models import AlertChannel, AlertMute, AlertRule
from webapp.alerts.selectors import rules_watching
from webapp.runs.models import Run

MOST_CHANNELS = 50
MOST_RULES = 200


def channel_add(*, team: Team, kind: str, target: str) -> AlertChannel:
    target = (target or "").strip()
    if kind == AlertChannel.Kind.WEBHOOK:
        try:
            URLValidator(schemes=["http", "https"])(target)
        except ValidationError:
            raise ValidationError({"target": "a webhook is an http:// or https:// URL"}) from None
    elif kind == AlertChannel.Kind.EMAIL:
        try:
            EmailValidator()(target)
        except ValidationError:
            raise ValidationError({"target": "not an e-mail address"}) from None
    else:
        raise ValidationError({"kind": "a channel is a webhook or an e-mail address"})
    if AlertChannel.objects.filter(team=team).count() >= MOST_CHANNELS:
        raise ValidationError({"target": f"a team has at most {MOST_CHANNELS} channels"})
    return AlertChannel.objects.create(team=team, kind=kind, target=target)


def rule_add(*, team: Team, user, name: str, metric: str, kind: str, value: float, above: bool = True,
             steps: int = 1, run: Run | None = None) -> AlertRule:  # fmt: skip
    if run is not None and run.team_id != team.pk:
        raise ValidationError({"run": "that run is not the team's"})
    if AlertRule.objects.filter(team=team).count() >= MOST_RULES:
        raise ValidationError({"name": f"a team has at most {MOST_RULES} rules"})
    rule = AlertRule(team=team, run=run, name=name, metric=metric, kind=kind, value=value, above=above, steps=steps,
                     created_by=user)  # fmt: skip
    rule.full_clean()
    rule.save()
    return rule


def rule_keys(run: Run) -> set[str]:
    """Every rule that can fire on the run: the built-ins, the stall watch and the team's own."""
    own = rules_watching(run=run, enabled_only=False)
    return {r.key for r in BUILTIN_RULES} | {STALLED_RULE_KEY} | {r.key for r in own}


def mute_set(*, run: Run, user, rule_key: str, muted: bool) -> None:
    if rule_key not in rule_keys(run):
        raise ValidationError({"rule": f"{rule_key!r} is no rule of this run"})
    if muted:
        AlertMute.objects.get_or_create(run=run, rule_key=rule_key, defaults={"created_by": user})
    else:
        AlertMute.objects.filter(run=run, rule_key=rule_key).delete()
