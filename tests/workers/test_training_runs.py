"""Real training runs: a real Redis, a real `celery worker` process, the process provider and the tiny model.

Nothing is faked here; the GPU is the one boundary we cannot reach, so these run on the CPU.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.webapp.runs.conftest import register_builtin
from tests.workers.conftest import process_alive, wait_final, wait_for
from webapp.live.models import RunEvent
from webapp.runs.models import Episode, MetricPoint, Status
from webapp.runs.services import run_create, run_request_cancel

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SMALL = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 256,
         "max_tool_calling_iterations": 4, "save_steps": 2, "learning_rate": 5e-4}  # fmt: skip


def start_run(team, max_steps: int, provider: str = "process", **config):
    version = register_builtin(team, "guess-number")
    return run_create(team=team, user=None, env_version=version, config={**SMALL, **config, "max_steps": max_steps},
                      provider=provider)  # fmt: skip


def deployment_pids(run) -> list[int]:
    return [pid for pid in (run.deployment or {}).get("handles", []) if isinstance(pid, int)]


def test_a_three_step_run_records_everything(acme, tiny_model, live_worker):
    run = wait_final(start_run(acme, max_steps=3), timeout=900)
    assert run.status == Status.SUCCEEDED, run.failure_reason
    statuses = list(RunEvent.objects.filter(run=run, type="run.status").values_list("payload__status", flat=True))
    assert statuses == ["queued", "provisioning", "running", "succeeded"]
    reward_steps = MetricPoint.objects.filter(run=run, name="reward").values_list("step", flat=True)
    assert sorted(reward_steps) == [1, 2, 3]
    assert MetricPoint.objects.filter(run=run, name="loss").count() == 3
    episodes = Episode.objects.filter(run=run)
    assert episodes.count() == 3 * 4
    with_tool = episodes.filter(num_tool_calls__gt=0).first()
    assert with_tool is not None, "the warmed-up tiny model should call a tool"
    tool_turn = next(t for t in with_tool.turns if t["role"] == "tool")
    assert tool_turn["content"] and tool_turn["name"] == "guess"
    assert any(t.get("tool_calls") for t in with_tool.turns if t["role"] == "assistant")
    assert {e.group for e in episodes.filter(step=1)} == {0}
    assert run.deployment.get("torn_down") is True
    assert deployment_pids(run) and not any(process_alive(pid) for pid in deployment_pids(run))
    seqs = list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


def test_cancel_mid_run_ends_cancelled_quickly(acme, tiny_model, live_worker):
    run = start_run(acme, max_steps=200)
    wait_for(lambda: run.metrics.exists(), timeout=600, what="the first step")
    run_request_cancel(run=run, user=None)
    run = wait_final(run, timeout=30)
    assert run.status == Status.CANCELLED
    assert run.step < 200
    assert not any(process_alive(pid) for pid in deployment_pids(run))


def test_a_killed_trainer_fails_the_run_and_keeps_what_was_recorded(acme, tiny_model, live_worker):
    run = start_run(acme, max_steps=200)
    wait_for(lambda: Episode.objects.filter(run=run).count() >= 4, timeout=600, what="episodes")
    run.refresh_from_db()
    recorded_points = MetricPoint.objects.filter(run=run).count()
    recorded_episodes = Episode.objects.filter(run=run).count()
    os.killpg(run.trainer_pid, signal.SIGKILL)
    run = wait_final(run, timeout=60)
    assert run.status == Status.FAILED
    assert "SIGKILL" in run.failure_reason
    assert MetricPoint.objects.filter(run=run).count() >= recorded_points
    assert Episode.objects.filter(run=run).count() >= recorded_episodes
    assert not any(process_alive(pid) for pid in deployment_pids(run))


def test_a_run_whose_environment_cannot_start_fails_with_the_reason(acme, live_worker, settings, tmp_path):
    from webapp.catalog.models import EnvironmentVersion

    version = register_builtin(acme, "guess-number")
    broken = EnvironmentVersion.objects.create(
        environment=version.environment, label="broken", source_kind="folder", source_ref=str(tmp_path),
        pinned_ref="x", tools=version.tools,
    )  # fmt: skip
    run = run_create(team=acme, user=None, env_version=broken, config={**SMALL, "max_steps": 1})
    run = wait_final(run, timeout=60)
    assert run.status == Status.FAILED
    assert "no server/app.py" in run.failure_reason


@pytest.mark.docker
def test_a_run_through_the_docker_provider(acme, tiny_model, live_worker):
    from tests.conftest import require_docker

    require_docker()
    run = wait_final(start_run(acme, max_steps=2, provider="docker"), timeout=900)
    assert run.status == Status.SUCCEEDED, run.failure_reason
    assert run.deployment["provider"] == "docker" and run.deployment.get("torn_down") is True
    assert MetricPoint.objects.filter(run=run, name="reward").count() == 2
    assert Episode.objects.filter(run=run).count() == 8
    from webapp.catalog.deployments import provider_get

    assert provider_get("docker").managed_containers(run=str(run.pk)) == []


def test_a_cancelled_run_resumes_from_its_last_checkpoint(acme, tiny_model, live_worker):
    from webapp.runs.services import run_resume

    run = start_run(acme, max_steps=6, save_steps=2)
    wait_for(lambda: MetricPoint.objects.filter(run=run, name="reward", step__gte=3).exists(), timeout=600,
             what="step 3 (after the first checkpoint)")  # fmt: skip
    run_request_cancel(run=run, user=None)
    run = wait_final(run, timeout=60)
    assert run.status == Status.CANCELLED
    run = run_resume(run=run, user=None)
    resumed_at = int(run.resume_from.rsplit("checkpoint-", 1)[1])
    assert resumed_at >= 2
    run = wait_final(run, timeout=600)
    assert run.status == Status.SUCCEEDED, run.failure_reason
    steps = sorted(MetricPoint.objects.filter(run=run, name="reward").values_list("step", flat=True))
    assert steps == [1, 2, 3, 4, 5, 6]  # the replayed steps replaced their first records: one point each
    assert Episode.objects.filter(run=run).count() == run.episodes_recorded == 6 * 4
    assert run.step == 6
    statuses = list(RunEvent.objects.filter(run=run, type="run.status").values_list("payload__status", flat=True))
    assert statuses[-4:] == ["queued", "provisioning", "running", "succeeded"]
