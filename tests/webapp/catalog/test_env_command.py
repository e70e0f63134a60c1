from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from webapp.catalog.services import builtins_register


@pytest.fixture
def builtins(acme, alice):
    return builtins_register(team=acme, user=alice)


def test_bootstrap_registration_is_idempotent(acme, alice, builtins):
    again = builtins_register(team=acme, user=alice)
    assert [v.pk for v in again] == [v.pk for v in builtins]
    assert sorted(v.environment.slug for v in builtins) == ["grid-catch", "guess-number", "word-guess"]


def test_env_list_json(builtins):
    out = StringIO()
    call_command("env", "list", "--json", stdout=out)
    rows = {row["slug"]: row for row in json.loads(out.getvalue())}
    assert set(rows) == {"grid-catch", "guess-number", "word-guess"}
    assert rows["grid-catch"]["versions"][0]["tools"][0]["name"] == "move"
    assert rows["word-guess"]["visibility"] == "shared"


def test_env_testdrive_json_with_the_process_provider(builtins):
    from tests.envs.conftest import child_server_pids

    out = StringIO()
    call_command("env", "testdrive", "guess-number", "--provider", "process", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["reset"]["observation"]["guesses_left"] == 6
    assert result["tools"][0]["name"] == "guess"
    assert result["step"]["observation"]["guesses_left"] == 5
    assert result["error"] is None
    assert child_server_pids() == set()


def test_env_testdrive_of_an_unknown_slug_fails_clearly(builtins):
    with pytest.raises(CommandError, match="no environment 'chess'"):
        call_command("env", "testdrive", "chess", "--provider", "process", "--json")


def test_env_testdrive_reports_a_refused_action(builtins):
    with pytest.raises(CommandError, match="refused the action"):
        call_command(
            "env", "testdrive", "grid-catch", "--provider", "process", "--action", '{"direction": "north"}',
            "--json", stdout=StringIO(),
        )  # fmt: skip


@pytest.mark.docker
def test_env_testdrive_json_with_the_docker_provider(builtins):
    from tests.conftest import require_docker

    require_docker()
    out = StringIO()
    call_command("env", "testdrive", "guess-number", "--provider", "docker", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["provider"] == "docker"
    assert result["step"]["observation"]["guesses_left"] == 5
