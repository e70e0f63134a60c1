"""Every run page and data endpoint checks the team; roles decide who may act."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.runs.conftest import register_builtin
from webapp.runs.models import Episode, MetricPoint, Status
from webapp.runs.services import run_create


@pytest.fixture
def run(acme, alice):
    version = register_builtin(acme, "guess-number")
    run = run_create(team=acme, user=alice, env_version=version, start=False, config={"max_steps": 3})
    MetricPoint.objects.create(run=run, name="reward", step=1, value=0.5, wall_time=1.0)
    call = {"name": "guess", "arguments": {"number": 3}}
    turns = [{"role": "assistant", "content": "", "tool_calls": [call]}]
    Episode.objects.create(
        run=run, step=1, group=0, index_in_group=0, prompt="p", reward=0.5, num_tool_calls=1, turns=turns
    )
    return run


READ_URLS = ["runs:run-detail", "runs:run-metrics", "runs:run-episodes", "runs:run-log"]
ACT_URLS = ["runs:run-cancel", "runs:run-clone", "runs:run-resume"]


@pytest.mark.parametrize("name", READ_URLS)
def test_charlie_cannot_read_acme_runs(client_for, charlie, run, name):
    assert client_for(charlie).get(reverse(name, args=[run.pk])).status_code == 404


@pytest.mark.parametrize("name", READ_URLS)
def test_a_viewer_can_read(client_for, bob, run, name):
    bob.memberships.update(role="viewer")
    assert client_for(bob).get(reverse(name, args=[run.pk])).status_code == 200


@pytest.mark.parametrize("name", ACT_URLS)
def test_charlie_cannot_act_on_acme_runs(client_for, charlie, run, name):
    assert client_for(charlie).post(reverse(name, args=[run.pk])).status_code == 404
    run.refresh_from_db()
    assert run.status == Status.QUEUED


@pytest.mark.parametrize("name", ACT_URLS)
def test_a_viewer_cannot_act(client_for, bob, run, name):
    bob.memberships.update(role="viewer")
    assert client_for(bob).post(reverse(name, args=[run.pk])).status_code == 403


def test_the_list_shows_only_the_users_teams(client_for, alice, charlie, run):
    assert [r.pk for r in client_for(alice).get("/runs/").context["page"]] == [run.pk]
    assert list(client_for(charlie).get("/runs/").context["page"]) == []


def test_list_filters(client_for, alice, run):
    c = client_for(alice)
    assert [r.pk for r in c.get("/runs/?status=queued").context["page"]] == [run.pk]
    assert list(c.get("/runs/?status=running").context["page"]) == []
    assert [r.pk for r in c.get("/runs/?env=guess-number&owner=alice").context["page"]] == [run.pk]
    assert list(c.get(f"/runs/?q={run.name[:-2]}zzz").context["page"]) == []


def test_metrics_and_episodes_json(client_for, alice, run):
    c = client_for(alice)
    series = c.get(reverse("runs:run-metrics", args=[run.pk])).json()["series"]
    assert series["reward"]["value"] == [0.5]
    episodes = c.get(reverse("runs:run-episodes", args=[run.pk]) + "?step=1&min_reward=0.4").json()["episodes"]
    assert episodes[0]["turns"][0]["tool_calls"][0]["name"] == "guess"
    assert c.get(reverse("runs:run-episodes", args=[run.pk]) + "?step=x").status_code == 400


def test_member_cancels_a_queued_run(client_for, bob, run):
    client_for(bob).post(reverse("runs:run-cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == Status.CANCELLED


def test_the_create_form_names_the_field_of_bad_settings(client_for, alice, run):
    version = run.env_version
    response = client_for(alice).post(
        reverse("runs:run-create"),
        {"env_version": version.pk, "model_name": "tiny-local", "replicas": 1, "provider": "process",
         "learning_rate": 0.001, "num_generations": 3, "per_device_train_batch_size": 4,
         "gradient_accumulation_steps": 1, "max_completion_length": 128, "max_tool_calling_iterations": 4,
         "max_steps": 2, "beta": 0, "temperature": 1, "seed": 1, "save_steps": 5, "step_timeout": 10},
    )  # fmt: skip
    assert response.status_code == 400
    assert "divisible by num_generations" in response.context["form"].errors["per_device_train_batch_size"][0]


def test_the_workers_page_counts_other_teams_runs_without_naming_them(client_for, alice, charlie, run):
    from django.utils import timezone

    from webapp.fleet.models import Worker

    now = timezone.now()
    caps = {"cuda": True, "vllm": "0.19.0"}
    Worker.objects.create(name="gpu-0@box", host="box", pid=7, queues=["gpu"], gpus=[0, 1], started_at=now,
                          seen_at=now, current_runs=[run.pk], capabilities=caps)  # fmt: skip
    Worker.objects.create(name="gpu-1@gone", host="gone", pid=8, queues=["gpu"], gpus=[], started_at=now,
                          seen_at=now - timezone.timedelta(minutes=5))  # fmt: skip
    mine = client_for(alice).get(reverse("workers")).content.decode()
    assert run.name in mine and "vLLM 0.19.0" in mine and "0, 1" in mine
    assert 'data-worker="gpu-1@gone"' in mine and ">lost<" in mine
    theirs = client_for(charlie).get(reverse("workers")).content.decode()
    assert run.name not in theirs and "a run of another team" in theirs
