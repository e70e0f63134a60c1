"""The `trainyard` command against a real server, with a token: what a user types on a laptop."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.conftest import ROOT, subprocess_env
from webapp.tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)


def trainyard(web_server, token: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "trainyard.cli", "--url", web_server.url, "--token", token, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=subprocess_env())


def test_a_laptop_adds_an_environment_through_a_worker_s_job(web_server, live_worker, acme, alice):
    write = token_create(user=alice, team=acme, name="laptop", scope="write")[1]
    maze = ROOT / "tests" / "fixtures" / "envs" / "metadata_maze"
    added = trainyard(web_server, write, "env", "add", "--folder", str(maze), "--name", "maze")
    assert added.returncode == 0, added.stderr[-2000:]
    assert added.stdout.startswith("added maze (") and "%" in added.stderr  # its progress, shown while it waits
    again = trainyard(web_server, write, "env", "add", "--folder", str(maze), "--name", "maze")
    assert again.returncode == 1 and "already has an environment called 'maze'" in again.stderr


def test_a_laptop_lists_creates_shows_and_cancels_with_a_token(web_server, acme, alice, guess_version):
    write = token_create(user=alice, team=acme, name="laptop", scope="write")[1]
    listed = json.loads(trainyard(web_server, write, "--json", "env", "list").stdout)
    assert [e["slug"] for e in listed["items"]] == ["guess-number"]

    created = trainyard(web_server, write, "--json", "run", "create", "--env", "guess-number", "--max-steps", "2")
    run = json.loads(created.stdout)
    assert run["status"] == "queued" and run["max_steps"] == 2
    shown = trainyard(web_server, write, "run", "show", str(run["id"]))
    line, status = shown.stdout.strip().rsplit(" ", 1)
    assert line == f"run {run['id']} {run['name']}:" and status in {"queued", "provisioning", "running"}  # a worker may
    cancelled = trainyard(web_server, write, "--json", "run", "cancel", str(run["id"]))  # have taken it meanwhile
    assert json.loads(cancelled.stdout)["status"] in {"cancelled", "cancelling"}

    evaluation = json.loads(trainyard(web_server, write, "--json", "eval", "create", "--model", "tiny-local",
                                      "--env", "guess-number", "--episodes", "4").stdout)  # fmt: skip
    shown = json.loads(trainyard(web_server, write, "--json", "eval", "show", str(evaluation["id"])).stdout)
    assert shown["id"] == evaluation["id"]
    # What this test queued must not occupy a worker that a later test of the session counts on.
    headers = {"Authorization": f"Bearer {write}"}
    httpx.post(f"{web_server.url}/api/v1/evaluations/{evaluation['id']}/cancel", headers=headers, timeout=30)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        states = [httpx.get(f"{web_server.url}/api/v1/{path}", headers=headers, timeout=30).json()["status"]
                  for path in (f"runs/{run['id']}", f"evaluations/{evaluation['id']}")]  # fmt: skip
        if all(state in {"cancelled", "failed", "succeeded"} for state in states):
            break
        time.sleep(1)

    read = token_create(user=alice, team=acme, name="read", scope="read")[1]
    refused = trainyard(web_server, read, "run", "create", "--env", "guess-number")
    assert refused.returncode == 1 and "403" in refused.stderr and "write scope" in refused.stderr
    unknown = trainyard(web_server, write, "run", "show", "999999")
    assert unknown.returncode == 1 and "404" in unknown.stderr
    assert trainyard(web_server, "ty_wrong", "env", "list").returncode == 1
