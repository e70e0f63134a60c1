"""/api/v1/runs/{id}/alerts: what the alert rules raised on a run, with each delivery's outcome (for a script that
watches its runs, or a bot that posts elsewhere)."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Router, Schema

from webapp.alerts.selectors import run_alerts
from webapp.api.responses import answers
from webapp.api.scope import team_run

router = Router(tags=["alerts"])


class DeliveryOut(Schema):
    kind: str
    target: str
    status: str
    attempts: int
    last_error: str
    response_code: int | None
    sent_at: datetime | None


class AlertOut(Schema):
    id: int
    rule: str
    title: str
    message: str
    metric: str
    step: int | None
    value: float | None
    created_at: datetime
    deliveries: list[DeliveryOut]


@router.get("/runs/{run_id}/alerts", response=answers(list[AlertOut]),
            summary="The alerts raised on a run (muted rules left out), newest first")  # fmt: skip
def alerts_of_run(request: HttpRequest, run_id: int):
    return [
        AlertOut(id=a.pk, rule=a.rule_key, title=a.title, message=a.message, metric=a.metric, step=a.step,
                 value=a.value, created_at=a.created_at,
                 deliveries=[DeliveryOut(kind=d.kind, target=d.target, status=d.status, attempts=d.attempts,
                                         last_error=d.last_error, response_code=d.response_code, sent_at=d.sent_at)
                             for d in a.deliveries.all()])
        for a in run_alerts(run=team_run(request, run_id))
    ]  # fmt: skip
