"""A catalog taken in whole, as a team would: a git repository of three environment folders read as OpenEnv catalog
cards (`env add --catalog`), a 3-step run on one of them through a real worker, a commit to another seen as
"superseded" with a new version (`env updates --add`), and the team's catalog exported as a snapshot that OpenEnv's
loader accepts."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from openenv.discovery import load_catalog

from tests.webapp.catalog.test_catalog_cards import catalog_repository, commit_change
from tests.workers.conftest import wait_for
from tests.workers.test_training_runs import SMALL
from webapp.catalog.models import Environment
from webapp.runs.models import Status
from webapp.runs.services import run_create

pytestmark = [pytest.mark.slow, pytest.mark.lane_b, pytest.mark.django_db(transaction=True)]


def command_json(*args: str) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_a_catalog_is_imported_trained_on_updated_and_exported(tmp_path, acme, alice, tiny_model, live_worker):
    repo = catalog_repository(tmp_path)
    added = command_json("env", "add", "--catalog", str(repo), "--team", "acme")
    assert sorted(e["slug"] for e in added["environments"]) == ["guess-number", "legal-moves", "metadata-maze"]
    assert [i["path"] for i in added["catalog"]["issues"]] == ["envs/draft"]

    guess = Environment.objects.get(team=acme, slug="guess-number").versions.get()
    run = run_create(team=acme, user=alice, env_version=guess, config={**SMALL, "max_steps": 3},
                     trust_override_reason="fixture: trust verdicts are tested elsewhere")  # fmt: skip
    wait_for(lambda: run.refresh_from_db() or run.status in ("succeeded", "failed", "cancelled"), timeout=600,
             what="the run on a catalog card to finish")  # fmt: skip
    assert run.status == Status.SUCCEEDED, run.failure_reason
    assert run.step == 3 and run.env_tool_calls > 0, "it played the environment the card named"

    second = commit_change(repo, "metadata_maze")
    updates = command_json("env", "updates", "metadata-maze", "--add")
    kinds = {row["path"]: (row["kind"], row["files_changed"], row["offer"]) for row in updates["changes"]}
    assert kinds["envs/metadata_maze"] == ("superseded", True, "new_version")
    assert kinds["envs/guess_number"] == ("superseded", False, "")
    assert [(a["name"], a["status"]) for a in updates["added"]] == [("metadata-maze", "new_version")]
    maze = Environment.objects.get(team=acme, slug="metadata-maze")
    assert maze.latest_version().git_ref == second and maze.versions.count() == 2
    assert Environment.objects.get(team=acme, slug="guess-number").versions.count() == 1

    exported = tmp_path / "catalog.json"
    call_command("env", "export", "--team", "acme", "--out", str(exported))
    snapshot = load_catalog(exported)
    assert sorted(e.display_name for e in snapshot.entries) == ["guess-number", "legal-moves", "metadata-maze"]
