"""Run definitions and their status machine."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from webapp.live.models import RunEvent
from webapp.runs.grpo import GRPOSettings
from webapp.runs.models import Status
from webapp.runs.selectors import run_prompts
from webapp.runs.services import IllegalTransition, run_clone, run_create, run_request_cancel, run_transition
from webapp.runs.spec import prompts_from_jsonl


def create(team, user, version, **kwargs):
    return run_create(team=team, user=user, env_version=version, start=False, **kwargs)


def test_a_new_run_is_queued_with_a_friendly_name_and_frozen_version(acme, alice, guess_version):
    run = create(acme, alice, guess_version, config={"max_steps": 5})
    assert run.status == Status.QUEUED and run.queued_at is not None
    assert run.max_steps == 5 and run.config["num_generations"] == 4
    assert len(run.name.split("-")) == 3
    guess_version.refresh_from_db()
    assert guess_version.is_frozen
    assert list(RunEvent.objects.filter(run=run).values_list("seq", "type")) == [(1, "run.status")]


def test_settings_that_do_not_fit_are_refused_naming_the_field(acme, alice, guess_version):
    with pytest.raises(ValidationError) as caught:
        create(acme, alice, guess_version, config={"per_device_train_batch_size": 3, "num_generations": 2})
    assert "per_device_train_batch_size" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        create(acme, alice, guess_version, config={"learning_rat": 0.1})
    assert "Unknown GRPO settings: learning_rat" in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        create(acme, alice, guess_version, config={"max_steps": "many"})
    assert "max_steps" in caught.value.message_dict


def test_a_viewer_cannot_create_runs(acme, bob, guess_version):
    from django.core.exceptions import PermissionDenied

    bob.memberships.update(role="viewer")
    with pytest.raises(PermissionDenied):
        create(acme, bob, guess_version)


def test_charlie_cannot_create_runs_in_acme(acme, charlie, guess_version):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        create(acme, charlie, guess_version)


def test_illegal_moves_are_refused_and_legal_ones_stamped(acme, alice, guess_version):
    run = create(acme, alice, guess_version)
    with pytest.raises(IllegalTransition, match="from queued to succeeded"):
        run_transition(run, Status.SUCCEEDED)
    run_transition(run, Status.PROVISIONING)
    run_transition(run, Status.RUNNING)
    run_transition(run, Status.FAILED, reason="boom")
    assert run.failure_reason == "boom" and run.finished_at and run.running_at and run.provisioning_at
    statuses = [e.payload["status"] for e in RunEvent.objects.filter(run=run, type="run.status")]
    assert statuses == ["queued", "provisioning", "running", "failed"]
    assert list(RunEvent.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2, 3, 4]


def test_cancelling_a_queued_run_ends_it_and_a_running_one_asks_it(acme, alice, guess_version):
    queued = create(acme, alice, guess_version)
    assert run_request_cancel(run=queued, user=alice).status == Status.CANCELLED
    running = create(acme, alice, guess_version)
    run_transition(running, Status.PROVISIONING)
    run_transition(running, Status.RUNNING)
    assert run_request_cancel(run=running, user=alice).status == Status.CANCELLING
    with pytest.raises(IllegalTransition):
        run_request_cancel(run=queued, user=alice)


def test_a_viewer_cannot_cancel_a_run(acme, alice, bob, guess_version):
    from django.core.exceptions import PermissionDenied

    run = create(acme, alice, guess_version)
    bob.memberships.update(role="viewer")
    with pytest.raises(PermissionDenied):
        run_request_cancel(run=run, user=bob)


def test_clone_copies_the_definition(acme, alice, guess_version):
    run = create(acme, alice, guess_version, config={"max_steps": 7, "seed": 3}, prompts=["Play!"])
    clone = run_clone(run=run, user=alice, start=False)
    assert clone.pk != run.pk and clone.name != run.name
    assert clone.config == run.config and run_prompts(run=clone) == [{"prompt": "Play!"}]


def test_jsonl_prompts_carry_reset_columns():
    rows = prompts_from_jsonl('{"prompt": "Find it", "seed": 4, "high": 32}\n\n{"prompt": "Again"}\n')
    assert rows == [{"prompt": "Find it", "seed": 4, "high": 32}, {"prompt": "Again"}]
    with pytest.raises(ValidationError, match="line 1 is not JSON"):
        prompts_from_jsonl("{nope")
    with pytest.raises(ValidationError, match="'prompt' field"):
        prompts_from_jsonl('{"text": "x"}')


def test_default_settings_are_valid():
    GRPOSettings().validate()


def test_the_provider_follows_what_the_source_can_run_on(acme, alice, guess_version):
    from webapp.catalog.models import EnvironmentVersion

    def version_of(kind):
        return EnvironmentVersion.objects.create(environment=guess_version.environment, label=kind, source_kind=kind,
                                                 source_ref="x", pinned_ref="x", tools=guess_version.tools)  # fmt: skip

    assert create(acme, alice, version_of("url"), provider="process").provider == "url"
    assert create(acme, alice, version_of("image"), provider="process").provider == "docker"
    assert create(acme, alice, guess_version, provider="docker").provider == "docker"
