"""A catalog taken in whole, as a team would: a git repository of four environment folders read as OpenEnv catalog
cards (`env add --catalog`); one of them needs a data file it does not ship, which its test drive names, which is
then given as a data asset (`env asset add`), after which a 3-step run on it through a real worker makes real steps;
a commit to another card is seen as "superseded" with a new version (`env updates --add`), and the team's catalog is
exported as a snapshot that OpenEnv's loader accepts. The worker has no network (nothing here reaches the internet):
the data comes only from the asset."""

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
from webapp.catalog.services import version_testdrive
from webapp.runs.models import Status
from webapp.runs.services import run_create

# Lane A (tests/lanes.sh): with it in lane B, lane B ended 47 s after lane A (1,734 s; this test takes ~25 s).
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def command_json(*args: str) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_a_catalog_is_imported_given_its_data_trained_on_updated_and_exported(
    tmp_path, acme, alice, tiny_model, live_worker
):
    repo = catalog_repository(tmp_path)
    added = command_json("env", "add", "--catalog", str(repo), "--team", "acme")
    assert sorted(e["slug"] for e in added["environments"]) == ["guess-number", "legal-moves", "lucky-numbers",
                                                                "metadata-maze"]  # fmt: skip
    assert [i["path"] for i in added["catalog"]["issues"]] == ["envs/draft"]

    lucky = Environment.objects.get(team=acme, slug="lucky-numbers").versions.get()
    drive = version_testdrive(version=lucky, tool="guess", arguments={"number": 3})
    assert "lucky_numbers.txt" in drive.error and "env asset add lucky-numbers" in drive.error, drive.error
    numbers = tmp_path / "lucky.txt"
    numbers.write_text("\n".join(str(n) for n in range(1, 17, 2)))  # the odd ones pay
    given = command_json("env", "asset", "add", "lucky-numbers", str(numbers), "--as", "LUCKY_NUMBERS_PATH")
    assert [(a["name"], a["as"]) for a in given["assets"]] == [("lucky.txt", "LUCKY_NUMBERS_PATH")]
    lucky.refresh_from_db()

    run = run_create(team=acme, user=alice, env_version=lucky, config={**SMALL, "max_steps": 3, "temperature": 0.7},
                     trust_override_reason="fixture: trust verdicts are tested elsewhere")  # fmt: skip
    wait_for(lambda: run.refresh_from_db() or run.status in ("succeeded", "failed", "cancelled"), timeout=600,
             what="the run on a catalog card to finish")  # fmt: skip
    assert run.status == Status.SUCCEEDED, run.failure_reason
    assert run.step == 3 and run.env_tool_calls > 0 and run.env_tool_errors < run.env_tool_calls, (
        run.env_tool_calls, run.env_tool_errors, [e.turns for e in run.episodes.all()][:3])  # fmt: skip
    answered = [t for e in run.episodes.all() for t in e.turns if t["role"] == "tool" and t.get("reward") is not None]
    assert all(t["reward"] in (0.0, 1.0) for t in answered) and not any("lucky_numbers" in (t.get("error") or "")
                                                                        for t in answered)  # fmt: skip

    second = commit_change(repo, "metadata_maze")
    updates = command_json("env", "updates", "metadata-maze", "--add")
    kinds = {row["path"]: (row["kind"], row["files_changed"], row["offer"]) for row in updates["changes"]}
    assert kinds["envs/metadata_maze"] == ("superseded", True, "new_version")
    assert kinds["envs/lucky_numbers"] == ("superseded", False, "")
    assert [(a["name"], a["status"]) for a in updates["added"]] == [("metadata-maze", "new_version")]
    maze = Environment.objects.get(team=acme, slug="metadata-maze")
    assert maze.latest_version().git_ref == second and maze.versions.count() == 2
    assert Environment.objects.get(team=acme, slug="lucky-numbers").versions.count() == 1

    exported = tmp_path / "catalog.json"
    call_command("env", "export", "--team", "acme", "--out", str(exported))
    snapshot = load_catalog(exported)
    assert sorted(e.display_name for e in snapshot.entries) == ["guess-number", "legal-moves", "lucky-numbers",
                                                                "metadata-maze"]  # fmt: skip
