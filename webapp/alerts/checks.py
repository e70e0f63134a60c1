"""Checking a run against the rules each time it records metrics, and raising an alert: recorded once per run and
rule, shown live on the run page and the runs list, and queued for delivery to each of the team's channels.

The check runs in whichever process recorded the metrics (a trainer, the API for an external run): a few small
queries per logged step. Delivery never happens there: it is work for a worker (webapp/alerts/delivery.py).
"""

from __future__ import annotations

import itertools
import logging
import statistics
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.dispatch import receiver
from django.utils import timezone

from webapp.alerts import conditions
from webapp.alerts.conditions import BUILTIN_RULES, STALLED_RULE_KEY, Finding, Series
from webapp.alerts.models import Alert, AlertChannel, AlertDelivery, AlertMute, AlertRule
from webapp.alerts.selectors import rules_watching
from webapp.evals.models import EvalEpisode
from webapp.live.publish import publish
from webapp.runs.ingest import metrics_recorded
from webapp.runs.models import MetricPoint, Run, Status

log = logging.getLogger(__name__)
TAIL = 60  # points of a series a rule sees
STALLED_AFTER_S = 600  # a running run with no new step for this long (and 10 of its usual steps) has stalled


def _tails(run_id: int, names: set[str]) -> dict[str, Series]:
    ranked = (
        MetricPoint.objects.filter(run_id=run_id, name__in=names)
        .annotate(rank=Window(RowNumber(), partition_by=[F("name")], order_by=F("step").desc()))
        .filter(rank__lte=TAIL)
        .values_list("name", "step", "value")
    )
    out: dict[str, Series] = {name: [] for name in names}
    for name, step, value in ranked:
        out[name].append((step, value))
    return {name: sorted(points) for name, points in out.items()}


def custom_finding(rule: AlertRule, series: Series) -> Finding | None:
    if rule.kind == AlertRule.Kind.THRESHOLD:
        return conditions.threshold(series, above=rule.above, value=rule.value, steps=max(1, rule.steps))
    if rule.kind == AlertRule.Kind.CHANGE:
        return conditions.relative_change(series, percent=rule.value, steps=max(1, rule.steps))
    return conditions.zscore(series, z=rule.value, window=max(2, rule.steps))


def alerts_check(run_id: int) -> list[Alert]:
    """Every rule of the run not yet fired nor muted, against the run's latest points; the alerts raised."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return []
    done = set(Alert.objects.filter(run_id=run_id).values_list("rule_key", flat=True))
    done |= set(AlertMute.objects.filter(run_id=run_id).values_list("rule_key", flat=True))
    builtin = [r for r in BUILTIN_RULES if r.key not in done]
    custom = [r for r in rules_watching(run=run) if r.key not in done]
    if not builtin and not custom:
        return []
    tails = _tails(run_id, {r.metric for r in builtin} | {r.metric for r in custom})
    raised = []
    for rule in builtin:
        found = rule.check(tails[rule.metric]) if tails[rule.metric] else None
        if found:
            raised.append(alert_raise(run, rule.key, rule.title, found, metric=rule.metric))
    for rule in custom:
        found = custom_finding(rule, tails[rule.metric]) if tails[rule.metric] else None
        if found:
            raised.append(alert_raise(run, rule.key, rule.name, found, metric=rule.metric))
    return [a for a in raised if a is not None]


@receiver(metrics_recorded)
def _on_metrics(sender, run_id: int, **kwargs) -> None:
    try:
        alerts_check(run_id)
    except Exception:  # an alert check must never stop a run from recording
        log.exception("checking run %s's alert rules failed", run_id)


def alert_raise(run: Run, key: str, title: str, found: Finding, *, metric: str = "") -> Alert | None:
    """Record the alert (once per run and rule), a delivery per enabled channel, then show it and queue them."""
    from webapp.alerts.delivery import delivery_queue

    try:
        with transaction.atomic():
            alert = Alert.objects.create(run=run, rule_key=key, title=title, message=found.message, metric=metric,
                                         step=found.step, value=found.value)  # fmt: skip
            deliveries = [
                AlertDelivery.objects.create(
                    alert=alert, channel=c, kind=c.kind, target=c.target, next_attempt_at=timezone.now()
                )
                for c in AlertChannel.objects.filter(team_id=run.team_id, enabled=True)
            ]
    except IntegrityError:  # another process raised it first
        return None
    publish(run.pk, [("run.alert", alert_event(alert))], team_id=run.team_id)
    for d in deliveries:
        delivery_queue(d.pk)
    return alert


def alert_event(alert: Alert) -> dict:
    return {"alert": {"id": alert.pk, "rule": alert.rule_key, "title": alert.title, "message": alert.message,
                      "step": alert.step, "metric": alert.metric}}  # fmt: skip


def stalled_runs_check(now=None) -> list[Alert]:
    """Beat, every minute: a running run that made no step for 10 minutes and 10 of its usual steps has stalled."""
    now = now or timezone.now()
    raised = []
    running = Run.objects.filter(status=Status.RUNNING, running_at__lt=now - timedelta(seconds=STALLED_AFTER_S))
    for run in running.exclude(alerts__rule_key=STALLED_RULE_KEY).exclude(alert_mutes__rule_key=STALLED_RULE_KEY):
        walls = list(MetricPoint.objects.filter(run=run, name="reward").order_by("-step")
                     .values_list("wall_time", flat=True)[:20])  # fmt: skip
        # A held-out evaluation between steps (512 episodes at the end of the demo) is progress too.
        evaluated = EvalEpisode.objects.filter(evaluation__run=run).order_by("-created_at").values_list(
            "created_at", flat=True).first()  # fmt: skip
        last = walls[0] if walls else run.running_at.timestamp()
        if evaluated is not None:
            last = max(last, evaluated.timestamp())
        usual = statistics.median(a - b for a, b in itertools.pairwise(walls)) if len(walls) > 2 else 0
        quiet = now.timestamp() - last
        if quiet > max(STALLED_AFTER_S, 10 * usual):
            found = Finding(run.step, quiet, f"no new step for {quiet / 60:.0f} minutes (a step usually takes "
                                             f"{usual:.0f} s); the run is still marked running")  # fmt: skip
            alert = alert_raise(run, STALLED_RULE_KEY, "Run stopped making steps", found)
            if alert:
                raised.append(alert)
    return raised
