"""Delivering an alert: a POST of Slack-compatible JSON to a webhook, or an e-mail through Django's mail. Each
delivery is a row first (webapp/core/work_queue: the one door), tried by a worker, and retried with backoff when a
try fails (a receiver down, an SMTP server refusing); after the last try it is failed, with the reason kept."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db.models import Q
from django.utils import timezone

from webapp.alerts.models import AlertDelivery
from webapp.core.work_queue import WorkKind, work_kind_register, work_queue

log = logging.getLogger(__name__)
TRIES = 6
FIRST_RETRY_S = 30  # then 60, 120, 240, 480
CLAIM_EXPIRES_S = 300  # a try whose worker died is taken again after this long


def _due(now: datetime) -> Q:
    return Q(status=AlertDelivery.Status.PENDING, next_attempt_at__lte=now) | Q(
        status=AlertDelivery.Status.SENDING, next_attempt_at__lt=now - timedelta(seconds=CLAIM_EXPIRES_S)
    )


DELIVERY_WORK = work_kind_register(
    WorkKind(
        name="alert delivery",
        task="workers.deliver_alert",
        queue="default",
        stranded=lambda cutoff: AlertDelivery.objects.filter(_due(timezone.now())).values_list("pk", flat=True),
    )
)


def delivery_queue(pk: int) -> None:
    work_queue(DELIVERY_WORK.name, pk)


def alert_text(delivery: AlertDelivery) -> tuple[str, str]:
    alert = delivery.alert
    run = alert.run
    url = f"{settings.TRAINYARD_PUBLIC_URL}{run.get_absolute_url()}"
    subject = f"[Trainyard] {alert.title} on run {run.name}"
    step = f" at step {alert.step}" if alert.step is not None else ""
    return subject, f"{alert.title} on run {run.name}{step}: {alert.message}.\n{url}"


def webhook_body(delivery: AlertDelivery) -> dict:
    """Slack's incoming-webhook shape (`text`, `blocks`), with the alert's fields for other receivers."""
    alert, run = delivery.alert, delivery.alert.run
    _subject, text = alert_text(delivery)
    url = f"{settings.TRAINYARD_PUBLIC_URL}{run.get_absolute_url()}"
    return {
        "text": text,
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": f"*{alert.title}* on <{url}|{run.name}>: {alert.message}"},
            }
        ],
        "trainyard": {
            "alert": alert.pk,
            "rule": alert.rule_key,
            "title": alert.title,
            "message": alert.message,
            "metric": alert.metric,
            "step": alert.step,
            "value": alert.value,
            "run": run.pk,
            "run_name": run.name,
            "team": run.team.slug,
            "url": url,
        },
    }


def _send(delivery: AlertDelivery) -> int | None:
    if delivery.kind == "webhook":
        response = httpx.post(delivery.target, json=webhook_body(delivery), timeout=10, follow_redirects=False)
        response.raise_for_status()
        return response.status_code
    subject, text = alert_text(delivery)
    send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [delivery.target])
    return None


def delivery_attempt(pk: int) -> str:
    """Claim a due delivery and try it once: sent, or pending again with the next try later, or failed at last."""
    now = timezone.now()
    claimed = AlertDelivery.objects.filter(_due(now), pk=pk).update(status=AlertDelivery.Status.SENDING,
                                                                     next_attempt_at=now)  # fmt: skip
    if not claimed:
        return "not due"
    delivery = AlertDelivery.objects.select_related("alert__run__team").get(pk=pk)
    attempts = delivery.attempts + 1
    try:
        code = _send(delivery)
    except httpx.HTTPStatusError as exc:
        error, code = f"HTTP {exc.response.status_code} from the webhook", exc.response.status_code
    except Exception as exc:  # a refused connection, a timeout, an SMTP error: recorded, then retried
        error, code = f"{type(exc).__name__}: {exc}", None
    else:
        AlertDelivery.objects.filter(pk=pk).update(status=AlertDelivery.Status.SENT, attempts=attempts, last_error="",
                                                   response_code=code, sent_at=timezone.now())  # fmt: skip
        return "sent"
    if attempts >= TRIES:
        AlertDelivery.objects.filter(pk=pk).update(status=AlertDelivery.Status.FAILED, attempts=attempts,
                                                   last_error=error[:2000], response_code=code)  # fmt: skip
        return "failed"
    retry_at = timezone.now() + timedelta(seconds=FIRST_RETRY_S * 2 ** (attempts - 1))
    AlertDelivery.objects.filter(pk=pk).update(status=AlertDelivery.Status.PENDING, attempts=attempts,
                                               last_error=error[:2000], response_code=code,
                                               next_attempt_at=retry_at)  # fmt: skip
    log.info("alert delivery %s failed (%s); try %s of %s at %s", pk, error, attempts + 1, TRIES, retry_at)
    return "retry"
