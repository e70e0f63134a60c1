"""The `trainyard` command against a real server, with a token: what a user types on a laptop."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import subprocess_env
from webapp.tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)


def trainyard(web_server, token: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "trainyard.cli", "--url", web_server.url, "--token", token, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=subprocess_env())


def test_a_laptop_lists_creates_shows_and_cancels_with_a_token(web_server, acme, alice, guess_version):
    write = token_create(user=alice, team=acme, name="laptop", scope="write")[1]
    listed = json.loads(trainyard(web_server, write, "--json", "env", "list").stdout)
    assert [e["slug"] for e in listed["items"]] == ["guess-number"]

    created = trainyard(web_server, write, "--json", "run", "create", "--env", "guess-number", "--max-steps", "2")
    run = json.loads(created.stdout)
    assert run["status"] == "queued" and run["max_steps"] == 2
    shown = trainyard(web_server, write, "run", "show", str(run["id"]))
    assert shown.stdout.strip() == f"run {run['id']} {run['name']}: queued"
    cancelled = trainyard(web_server, write, "--json", "run", "cancel", str(run["id"]))
    assert json.loads(cancelled.stdout)["status"] == "cancelled"

    evaluation = json.loads(trainyard(web_server, write, "--json", "eval", "create", "--model", "tiny-local",
                                      "--env", "guess-number", "--episodes", "4").stdout)  # fmt: skip
    assert (
        json.loads(trainyard(web_server, write, "--json", "eval", "show", str(evaluation["id"])).stdout)["id"]
        == (evaluation["id"])
    )

    read = token_create(user=alice, team=acme, name="read", scope="read")[1]
    refused = trainyard(web_server, read, "run", "create", "--env", "guess-number")
    assert refused.returncode == 1 and "403" in refused.stderr and "write scope" in refused.stderr
    unknown = trainyard(web_server, write, "run", "show", "999999")
    assert unknown.returncode == 1 and "404" in unknown.stderr
    assert trainyard(web_server, "ty_wrong", "env", "list").returncode == 1
