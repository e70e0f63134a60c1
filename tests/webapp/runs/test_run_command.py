"""`manage.py run show|resume`: what a script (or the compose test) drives a run with, and its refusals."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from webapp.artifacts.layout import CHECKPOINT_MARKER, run_checkpoint_key
from webapp.artifacts.store import artifact_store
from webapp.runs.models import Status
from webapp.runs.services import run_create, run_fail


def command(*args: str) -> dict:
    out = io.StringIO()
    call_command("run", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def failed_run(acme, alice, guess_version):
    run = run_create(team=acme, user=alice, env_version=guess_version, start=False, config={"max_steps": 6})
    return run_fail(run, "worker lost: its host stopped beating")


def checkpoint_stored(run, step: int) -> None:
    artifact_store().write_bytes(f"{run_checkpoint_key(run.pk, f'checkpoint-{step}')}/{CHECKPOINT_MARKER}", b"{}")


def test_a_failed_run_resumes_from_its_last_stored_checkpoint(failed_run):
    checkpoint_stored(failed_run, 2)
    checkpoint_stored(failed_run, 4)
    shown = command("show", str(failed_run.pk))
    assert shown["status"] == "failed" and shown["saved_models"] == ["checkpoint-4", "checkpoint-2"]

    resumed = command("resume", str(failed_run.pk), "--json")
    assert resumed["status"] == "queued" and resumed["resume_from"] == "checkpoint-4"


def test_a_named_checkpoint_is_taken_and_one_that_is_not_stored_is_refused(failed_run):
    checkpoint_stored(failed_run, 2)
    checkpoint_stored(failed_run, 4)
    with pytest.raises(CommandError, match="no checkpoint-3 in the artifact store"):
        call_command("run", "resume", str(failed_run.pk), "--checkpoint", "checkpoint-3")
    failed_run.refresh_from_db()
    assert failed_run.status == Status.FAILED  # nothing changed

    assert command("resume", str(failed_run.pk), "--checkpoint", "checkpoint-2", "--json")["resume_from"] == (
        "checkpoint-2"
    )


def test_only_a_finished_run_resumes_and_an_unknown_run_is_named(failed_run):
    command("resume", str(failed_run.pk), "--json")  # from scratch: nothing was stored
    with pytest.raises(CommandError, match="only a finished run can resume"):
        call_command("run", "resume", str(failed_run.pk))
    for action in ("show", "resume", "cancel"):
        with pytest.raises(CommandError, match="there is no run 999999"):
            call_command("run", action, "999999")


def test_a_run_created_from_the_command_line_has_its_owner(acme, alice, bob, charlie, guess_version, client_for):
    created = command(
        "create", "--env", "guess-number", "--team", "acme", "--user", "bob", "--max-steps", "2", "--json"
    )
    from webapp.runs.models import Run

    run = Run.objects.get(pk=created["id"])
    assert run.created_by == bob and created["owner"] == "bob"
    assert ">bob<" in client_for(alice).get("/runs/").content.decode(), "the runs list shows its owner"
    with pytest.raises(CommandError, match="--user: charlie is not a member of acme"):
        command("create", "--env", "guess-number", "--team", "acme", "--user", "charlie", "--json")
