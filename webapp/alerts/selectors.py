"""Reads of alerts, always through a run or a team the caller has already been allowed to see."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from webapp.alerts.conditions import BUILTIN_RULES, STALLED_RULE_KEY
from webapp.alerts.models import Alert, AlertChannel, AlertDelivery, AlertMute, AlertRule
from webapp.runs.models import Run


def rules_watching(*, run: Run, enabled_only: bool = True):
    """The team's own rules that watch this run: those on every run of the team, and those on this run."""
    rules = AlertRule.objects.filter(team_id=run.team_id)
    if enabled_only:
        rules = rules.filter(enabled=True)
    return rules.filter(Q(run__isnull=True) | Q(run=run))


def run_alerts(*, run: Run) -> list[Alert]:
    muted = set(AlertMute.objects.filter(run=run).values_list("rule_key", flat=True))
    return [a for a in Alert.objects.filter(run=run).prefetch_related("deliveries") if a.rule_key not in muted]


def run_rules(*, run: Run) -> list[dict[str, Any]]:
    """The rules watching a run, each with whether it is muted there."""
    muted = set(AlertMute.objects.filter(run=run).values_list("rule_key", flat=True))
    rules = [{"key": r.key, "title": r.title, "about": r.description, "metric": r.metric} for r in BUILTIN_RULES]
    rules.append(
        {
            "key": STALLED_RULE_KEY,
            "title": "Run stopped making steps",
            "metric": "",
            "about": "No new step for 10 minutes and 10 of its usual steps while it is marked running.",
        }
    )
    own = rules_watching(run=run)
    rules += [{"key": r.key, "title": r.name, "metric": r.metric, "about": f"{r.metric} {r.get_kind_display()}"}
              for r in own]  # fmt: skip
    for rule in rules:
        rule["muted"] = rule["key"] in muted
    return rules


def alert_counts(*, run_ids: list[int]) -> dict[int, int]:
    rows = Alert.objects.filter(run_id__in=run_ids).values("run_id").annotate(n=Count("id"))
    return {row["run_id"]: row["n"] for row in rows}


def team_channels(*, team_id: int):
    return AlertChannel.objects.filter(team_id=team_id).order_by("created_at")


def team_rules(*, team_id: int):
    return AlertRule.objects.filter(team_id=team_id).select_related("run")


def team_deliveries(*, team_id: int, limit: int = 100):
    return AlertDelivery.objects.filter(alert__run__team_id=team_id).select_related("alert__run")[:limit]
