"""A real run on an environment that stops paying (tests/fixtures/envs/fading_guess: any guess pays 1.0 for the first
12 episodes its server plays, then 0.0) raises the reward-collapse alert a few steps after the rewards stop, and a
real worker delivers it to a real HTTP receiver and a real SMTP server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workers.conftest import wait_final, wait_for
from webapp.alerts.models import Alert, AlertDelivery
from webapp.alerts.services import channel_add
from webapp.catalog.services import environment_create
from webapp.runs.models import Episode, MetricPoint, Status, TokenTrace
from webapp.runs.services import run_create
from webapp.runs.token_traces import trace_dict

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FADING = Path(__file__).resolve().parents[1] / "fixtures" / "envs" / "fading_guess"
SETTINGS = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 160, "temperature": 0.7,
            "max_tool_calling_iterations": 3, "learning_rate": 2e-5, "save_steps": 50, "max_steps": 12}  # fmt: skip


def test_a_run_whose_environment_stops_paying_raises_a_delivered_reward_collapse_alert(
    acme, alice, tiny_model, live_worker, webhook_receiver, smtp_server
):
    env = environment_create(team=acme, user=None, name="fading-guess", source_kind="folder", source_ref=str(FADING))
    channel_add(team=acme, kind="webhook", target=webhook_receiver.url)
    channel_add(team=acme, kind="email", target="oncall@example.com")
    run = run_create(team=acme, user=alice, env_version=env.versions.get(), model_name="tiny-local", config=SETTINGS,
                     replicas=1, trust_override_reason="fixture: trust verdicts are tested elsewhere")  # fmt: skip
    run = wait_final(run, timeout=900)
    assert run.status == Status.SUCCEEDED, run.failure_reason
    assert run.env_tool_calls > 0, "the rewards came from the environment's steps"

    rewards = list(MetricPoint.objects.filter(run=run, name="reward").order_by("step").values_list("step", "value"))
    paid = [step for step, value in rewards if value > 0]
    assert paid and max(paid) <= 4, rewards
    alert = Alert.objects.get(run=run, rule_key="reward_collapse")
    # Five to eight steps of nothing, as the rule needs at this run's own rate of unpaid steps before (0 to 2 of 3-4).
    assert max(paid) < alert.step <= max(paid) + 8, (alert.step, rewards)
    # Nothing paying is also no learning signal (every group's rewards equal); nothing else fired.
    assert set(Alert.objects.filter(run=run).values_list("rule_key", flat=True)) <= {"reward_collapse",
                                                                                      "no_learning_signal"}  # fmt: skip

    # One GRPO group a step was recorded token by token from the trainer's own loss computation.
    traces = list(TokenTrace.objects.filter(run=run).order_by("step", "index_in_group"))
    assert len(traces) == 4 * SETTINGS["max_steps"] and {t.group for t in traces} == {0}
    for trace in traces:
        values = trace_dict(trace)
        assert len(values["tokens"]) == len(values["logprob"]) == len(values["entropy"]) == len(values["trained"]) > 0
        assert all(v <= 0.001 for v in values["logprob"]) and all(v >= -0.001 for v in values["entropy"])
        episode = Episode.objects.get(run=run, step=trace.step, group=0, index_in_group=trace.index_in_group)
        if episode.num_tool_calls:
            assert "guess" in "".join(values["tokens"])
            starts = [t["at"] for t in episode.turns if t["role"] == "tool" and "seconds" in t]
            assert starts == sorted(starts) and all(a > 0 for a in starts), "each call on the timeline, after a turn"
            assert 0 in values["trained"], "the environment's answers are not trained on"
        if abs(episode.advantage) > 0.01:
            assert (values["advantage"][0] > 0) == (episode.advantage > 0), "the advantage the loss used"

    # The worker delivers once the run has freed it (one process here; a CPU worker does it at once in a deployment).
    wait_for(lambda: AlertDelivery.objects.filter(alert=alert, status="sent").count() == 2, timeout=180,
             what="both deliveries")  # fmt: skip
    body = next(b for b in webhook_receiver.bodies if b["trainyard"]["rule"] == "reward_collapse")
    assert body["trainyard"]["run"] == run.pk and body["trainyard"]["step"] == alert.step
    assert "Reward collapse" in body["text"] and f"/runs/{run.pk}/" in body["text"]
    mail = next(m for m in smtp_server if b"Reward collapse" in m.content)
    assert mail.rcpt_tos == ["oncall@example.com"]
