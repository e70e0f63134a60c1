"""Alerts on a recorded run: raised once when a rule's condition holds, shown on the run page and counted in the runs
list, muted per run, delivered to a real webhook receiver and a real SMTP server, retried when a try fails; and
every page and action checks the team."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.webapp.runs.conftest import register_builtin
from webapp.alerts.checks import alerts_check, stalled_runs_check
from webapp.alerts.delivery import delivery_attempt
from webapp.alerts.models import Alert, AlertDelivery
from webapp.alerts.services import channel_add, rule_add
from webapp.runs.ingest import metrics_ingest
from webapp.runs.models import Status
from webapp.runs.services import run_create

SMTP = "django.core.mail.backends.smtp.EmailBackend"


@pytest.fixture
def run(acme, alice):
    version = register_builtin(acme, "guess-number")
    return run_create(team=acme, user=alice, env_version=version, start=False, config={"max_steps": 20})


def record(run, rewards, start=1, **more):
    batch = [
        (start + i, 1000.0 + i, {"reward": r, **{k: v[i] for k, v in more.items()}}) for i, r in enumerate(rewards)
    ]
    metrics_ingest(run.pk, batch, team_id=run.team_id, max_steps=20)


def test_a_collapsing_reward_raises_one_alert_shown_on_the_run_and_in_the_list(run, alice, client_for, charlie):
    record(run, [0.8, 0.9, 0.7, 0.8])
    assert not Alert.objects.exists()
    record(run, [0.0, 0.0, 0.0, 0.0], start=5)
    alert = Alert.objects.get()
    assert (alert.rule_key, alert.step) == ("reward_collapse", 8) and "collapse" in alert.message
    record(run, [0.0], start=9)
    assert Alert.objects.count() == 1, "once per run and rule"
    page = client_for(alice).get(reverse("alerts:run-alerts", args=[run.pk])).content.decode()
    assert "Reward collapse" in page and "at step 8" in page
    listing = client_for(alice).get(reverse("runs:run-list")).content.decode()
    assert 'data-alerts="1"' in listing and "1 alert<" in listing
    assert client_for(charlie).get(reverse("alerts:run-alerts", args=[run.pk])).status_code == 404


def test_a_muted_rule_stays_quiet_on_that_run_only(run, acme, alice, bob, client_for):
    response = client_for(bob).post(
        reverse("alerts:run-mute", args=[run.pk]), {"rule": "reward_collapse", "muted": "1"}
    )
    assert response.status_code == 302
    record(run, [0.8, 0.9, 0.7, 0.8, 0.0, 0.0, 0.0, 0.0])
    assert not Alert.objects.exists()
    fragment = client_for(alice).get(reverse("alerts:run-alerts", args=[run.pk])).content.decode()
    assert "muted" in fragment and "Unmute" in fragment
    other = run_create(team=acme, user=alice, env_version=run.env_version, start=False, config={"max_steps": 20})
    record(other, [0.8, 0.9, 0.7, 0.8, 0.0, 0.0, 0.0, 0.0])
    assert Alert.objects.filter(run=other).count() == 1
    refused = client_for(bob).post(reverse("alerts:run-mute", args=[run.pk]), {"rule": "no-such-rule", "muted": "1"})
    assert refused.status_code == 302 and Alert.objects.count() == 1


def test_a_teams_own_threshold_rule_fires_on_its_metric(run, acme, alice):
    rule_add(team=acme, user=alice, name="KL too high", metric="kl", kind="threshold", value=0.5, steps=2)
    record(run, [0.1, 0.1, 0.1], kl=[0.1, 0.6, 0.7])
    alert = Alert.objects.get()
    assert alert.rule_key.startswith("rule-") and alert.title == "KL too high" and alert.step == 3


def test_deliveries_reach_a_webhook_and_a_mailbox_and_a_failed_try_is_retried(
    run, acme, webhook_receiver, smtp_server, settings
):
    settings.EMAIL_BACKEND = SMTP  # pytest-django keeps mail in memory; this test sends it to a real server
    channel_add(team=acme, kind="webhook", target=webhook_receiver.url)
    channel_add(team=acme, kind="email", target="oncall@example.com")
    webhook_receiver.fail = 1
    record(run, [0.8, 0.9, 0.7, 0.8, 0.0, 0.0, 0.0, 0.0])
    hook = AlertDelivery.objects.get(kind="webhook")
    mail = AlertDelivery.objects.get(kind="email")
    assert delivery_attempt(hook.pk) == "retry"
    hook.refresh_from_db()
    assert hook.status == "pending" and hook.attempts == 1 and "500" in hook.last_error
    assert hook.next_attempt_at > timezone.now(), "the next try waits"
    assert delivery_attempt(hook.pk) == "not due"
    AlertDelivery.objects.filter(pk=hook.pk).update(next_attempt_at=timezone.now())  # time passes
    assert delivery_attempt(hook.pk) == "sent"
    body = webhook_receiver.bodies[0]
    assert "Reward collapse" in body["text"] and body["blocks"][0]["type"] == "section"
    assert body["trainyard"]["rule"] == "reward_collapse" and body["trainyard"]["run"] == run.pk
    assert delivery_attempt(mail.pk) == "sent"
    assert smtp_server[0].rcpt_tos == ["oncall@example.com"] and b"Reward collapse" in smtp_server[0].content
    hook.refresh_from_db()
    assert (hook.status, hook.attempts, hook.response_code) == ("sent", 2, 200)


def test_a_mailbox_that_cannot_be_reached_is_a_recorded_failure(run, acme, settings):
    settings.EMAIL_BACKEND = SMTP
    settings.EMAIL_PORT = 1  # nothing listens there
    channel_add(team=acme, kind="email", target="oncall@example.com")
    record(run, [0.8, 0.9, 0.7, 0.8, 0.0, 0.0, 0.0, 0.0])
    mail = AlertDelivery.objects.get()
    for _ in range(6):
        AlertDelivery.objects.filter(pk=mail.pk).update(next_attempt_at=timezone.now())
        delivery_attempt(mail.pk)
    mail.refresh_from_db()
    assert mail.status == "failed" and mail.attempts == 6 and "Connection" in mail.last_error


def test_a_run_that_stopped_making_steps_is_alerted_by_beat(run):
    record(run, [0.1, 0.2])
    run.status, run.running_at = Status.RUNNING, timezone.now() - timedelta(hours=1)
    run.save(update_fields=["status", "running_at"])
    assert [a.rule_key for a in stalled_runs_check(now=timezone.now() + timedelta(hours=1))] == ["stalled"]
    assert alerts_check(run.pk) == []


def test_the_alerts_page_adds_channels_and_rules_for_members_and_names_bad_fields(acme, alice, client_for):
    client = client_for(alice)
    bad = client.post(reverse("alerts:alerts"), {"action": "channel", "channel-kind": "webhook",
                                                 "channel-target": "ftp://x"})  # fmt: skip
    assert bad.status_code == 400 and "http:// or https://" in bad.content.decode()
    bad = client.post(reverse("alerts:alerts"), {"action": "rule", "rule-name": "x", "rule-metric": "kl",
                                                 "rule-kind": "threshold", "rule-above": "1", "rule-value": "1e99",
                                                 "rule-steps": "1"})  # fmt: skip
    assert bad.status_code == 400 and "value" in bad.context["rule_form"].errors
    ok = client.post(reverse("alerts:alerts"), {"action": "channel", "channel-kind": "email",
                                                "channel-target": "oncall@example.com"})  # fmt: skip
    assert ok.status_code == 302
    run = run_create(team=acme, user=alice, env_version=register_builtin(acme, "guess-number"), start=False)
    ok = client.post(reverse("alerts:alerts"), {"action": "rule", "rule-name": "KL", "rule-metric": "kl",
                                                "rule-kind": "zscore", "rule-above": "1", "rule-value": "3",
                                                "rule-steps": "20", "rule-run": str(run.pk)})  # fmt: skip
    assert ok.status_code == 302
    from webapp.alerts.models import AlertRule

    assert AlertRule.objects.get(name="KL").run == run
    assert "oncall@example.com" in client.get(reverse("alerts:alerts")).content.decode()


def test_a_viewer_reads_alerts_but_changes_nothing(acme, run, client_for):
    from tests.factories import MembershipFactory, UserFactory

    viewer = UserFactory(username="vera")
    MembershipFactory(team=acme, user=viewer, role="viewer")
    client = client_for(viewer)
    assert client.get(reverse("alerts:alerts")).status_code == 200
    assert client.post(reverse("alerts:alerts"), {"action": "channel", "channel-kind": "email",
                                                  "channel-target": "v@example.com"}).status_code == 403  # fmt: skip
    assert (
        client.post(reverse("alerts:run-mute", args=[run.pk]), {"rule": "reward_collapse", "muted": "1"}).status_code
        == 403
    )


def test_a_script_reads_a_runs_alerts_through_the_api_and_another_team_cannot(run, acme, globex, alice, charlie,
                                                                             client):  # fmt: skip
    from webapp.tokens.services import token_create

    channel_add(team=acme, kind="webhook", target="http://127.0.0.1:1/hook")
    record(run, [0.8, 0.9, 0.7, 0.8, 0.0, 0.0, 0.0, 0.0])
    alice_token = token_create(user=alice, team=acme, name="t", scope="read")[1]
    answer = client.get(f"/api/v1/runs/{run.pk}/alerts", HTTP_AUTHORIZATION=f"Bearer {alice_token}").json()
    assert [a["rule"] for a in answer] == ["reward_collapse"] and answer[0]["step"] == 8
    assert answer[0]["deliveries"][0]["kind"] == "webhook" and answer[0]["deliveries"][0]["status"] == "pending"
    charlie_token = token_create(user=charlie, team=globex, name="t", scope="read")[1]
    refused = client.get(f"/api/v1/runs/{run.pk}/alerts", HTTP_AUTHORIZATION=f"Bearer {charlie_token}")
    assert refused.status_code == 404
