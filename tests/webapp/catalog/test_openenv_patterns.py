"""OpenEnv environments as users bring them, one fixture of our own per pattern (never upstream code): MCP tools,
a single-session server, a package from PyPI, a seedless reset, information in metadata, a git source. Each is
added for real (its server started, its tools listed, its capacity and seeds measured) and test-driven."""

from __future__ import annotations

import json
import shutil
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from webapp.catalog.models import Environment, TrustReport
from webapp.catalog.services import environment_create, version_add, version_testdrive
from webapp.catalog.trust import trust_check_run
from webapp.tokens.services import token_create

FIXTURE_ENVS = Path(__file__).resolve().parents[2] / "fixtures" / "envs"

pytestmark = pytest.mark.django_db


def add(team, folder: str, **kwargs):
    env = environment_create(team=team, user=None, name=folder, source_kind="folder",
                             source_ref=str(FIXTURE_ENVS / folder), **kwargs)  # fmt: skip
    return env.versions.get()


def test_an_mcp_environment_offers_its_real_tools_not_call_tool(acme):
    version = add(acme, "mcp_vault")
    assert version.mcp is True
    tools = {t["name"]: t for t in version.tools}
    assert set(tools) == {"try_code", "read_dial"}
    assert tools["try_code"]["parameters"]["properties"]["code"]["type"] == "integer"
    assert tools["try_code"]["description"] == "Try a code on the vault's lock."
    assert "Args:" not in tools["try_code"]["description"]


def test_the_test_drive_calls_an_mcp_tool_and_reports_its_errors(acme):
    version = add(acme, "mcp_vault")
    drive = version_testdrive(version=version, tool="try_code", arguments={"code": 4}, seed=3)
    assert drive.error is None
    assert drive.step["result"] in {"higher", "lower", "open"}
    failed = version_testdrive(version=version, tool="try_code", arguments={"code": 42}, seed=3)
    assert failed.error and "the dial only has 0 to 9" in failed.error
    unknown = version_testdrive(version=version, action={"type": "call_tool", "tool_name": "hello", "arguments": {}})
    assert unknown.error and "tool_not_found" in unknown.error


def test_a_server_whose_action_is_its_own_call_tool_lists_its_tools_and_its_refusals_in_words_are_errors(acme):
    # ledger is written the way OpenEnv's finqa is: its action class subclasses CallToolAction, so the server refuses
    # a list_tools step (its MCP endpoint lists the tools), and its tools refuse with an "Error: ..." answer.
    version = add(acme, "ledger")
    assert sorted(t["name"] for t in version.tools) == ["lookup", "submit_answer"]
    found = version_testdrive(version=version, tool="lookup", arguments={"account": "cash"}, seed=3)
    assert found.error is None and json.loads(found.step["result"]) == {"account": "cash", "balance": 120}
    refused = version_testdrive(version=version, tool="lookup", arguments={"account": "checking"}, seed=3)
    assert refused.error and "Error: Account 'checking' not found" in refused.error, refused.error


def test_a_single_session_server_is_measured_and_runs_get_enough_replicas(acme):
    from webapp.runs.grpo import GRPOSettings
    from webapp.runs.spec import replicas_for_run

    version = add(acme, "one_session", capacity=64)
    assert version.capacity == 1 and version.capacity_measured == 1
    assert version.effective_capacity == 1
    config = GRPOSettings.from_dict({"per_device_train_batch_size": 4, "num_generations": 4})
    assert replicas_for_run(version, config, None, "process") == 4
    with pytest.raises(ValidationError) as refused:
        replicas_for_run(version, config, 2, "process")
    message = refused.value.message_dict["replicas"][0]
    assert "4 sessions at once" in message and "takes 1 a replica" in message and "at least 4 replicas" in message


def test_a_hardcoded_capacity_below_the_declared_one_is_measured(acme, tmp_path):
    folder = tmp_path / "capped_coin"
    shutil.copytree(FIXTURE_ENVS / "one_session", folder)
    app = folder / "server" / "app.py"
    text = app.read_text().replace("SUPPORTS_CONCURRENT_SESSIONS = False", "SUPPORTS_CONCURRENT_SESSIONS = True")
    app.write_text(text.replace('int(os.getenv("MAX_CONCURRENT_ENVS", "1"))', "2"))
    env = environment_create(team=acme, user=None, name="capped", source_kind="folder", source_ref=str(folder),
                             capacity=16)  # fmt: skip
    version = env.versions.get()
    assert (version.capacity, version.capacity_measured, version.effective_capacity) == (16, 2, 2)
    assert "session 3 refused" in version.capacity_note


def test_a_server_that_needs_a_pypi_package_gets_it_in_an_environment_of_its_own(acme):
    version = add(acme, "roman_numerals")
    assert version.dependencies["requirements"] == ["roman>=4.0", "pydantic>=2.0.0"]
    assert version.dependencies["status"] == "installed"
    assert version.dependencies["installed"] == ["roman>=4.0"]
    drive = version_testdrive(version=version, tool="answer", arguments={"value": 3}, seed=1)
    assert drive.error is None, drive.error
    assert drive.reset["observation"]["numeral"]


def test_a_missing_module_is_named_in_one_line(acme, tmp_path):
    folder = tmp_path / "needs_spiel"
    shutil.copytree(FIXTURE_ENVS / "metadata_maze", folder)
    app = folder / "server" / "app.py"
    # The shape of upstream servers: the real import fails, then a fallback import fails too.
    fallback = "try:\n    import pyspiel_missing_here  # noqa\nexcept ImportError:\n    from models import X  # noqa\n"
    app.write_text(app.read_text().replace("import os\n", "import os\n" + fallback, 1))
    with pytest.raises(ValidationError) as refused:
        environment_create(team=acme, user=None, name="spiel", source_kind="folder", source_ref=str(folder))
    message = refused.value.message_dict["source_ref"][0]
    assert "No module named 'pyspiel_missing_here'" in message
    assert "No module named 'models'" not in message
    assert "whole log:" in message and "\n" not in message


def test_a_seedless_reset_is_detected(acme):
    assert add(acme, "seedless_dice").seeding == "ignored"
    assert add(acme, "metadata_maze").seeding == "honoured"


def test_metadata_reaches_the_model_and_settings_narrow_it(acme):
    from envs.adapter import format_observation

    version = add(acme, "metadata_maze")
    observation = {"message": "Moved.", "metadata": {"layout": "..@..E.", "exit": 5}, "reward": 0.0, "done": False}
    assert "..@..E." in format_observation(observation)
    narrowed = add(acme, "metadata_maze", slug="maze-message-only", settings={"observation_fields": ["message"]})
    assert narrowed.settings["observation_fields"] == ["message"]
    assert format_observation(observation, narrowed.settings["observation_fields"]) == "Moved."
    assert version.settings == {}


def test_settings_are_checked_against_the_server(acme):
    with pytest.raises(ValidationError) as refused:
        add(acme, "metadata_maze", settings={"fixed": {"speed": 3}})
    assert "'speed' is not an argument of any tool" in refused.value.message_dict["fixed"][0]
    with pytest.raises(ValidationError) as reserved:
        add(acme, "metadata_maze", settings={"env": {"MAX_CONCURRENT_ENVS": "99"}})
    assert "set by Trainyard" in reserved.value.message_dict["env"][0]
    assert not Environment.objects.exists()


def test_server_settings_and_fixed_fields_reach_the_server_not_the_model(acme, tmp_path):
    folder = tmp_path / "dial_env"
    shutil.copytree(FIXTURE_ENVS / "metadata_maze", folder)
    app = folder / "server" / "app.py"
    app.write_text(
        app.read_text().replace(
            'return MazeObservation(message="Find the exit."',
            'return MazeObservation(message="Find the exit. " + os.environ["MAZE_MOOD"]',
        )
    )
    version = add_folder(acme, folder, settings={"env": {"MAZE_MOOD": "cheerful"}, "fixed": {"direction": "left"}})
    drive = version_testdrive(version=version, tool="step", arguments={}, seed=1)
    assert drive.error is None, drive.error
    assert drive.reset["observation"]["message"].endswith("cheerful")
    assert drive.action == {"direction": "left"}
    from envs.adapter import tool_env_class

    cls = tool_env_class(name="dial", tools=version.tools, endpoints=["http://127.0.0.1:1"],
                         fixed_arguments=version.fixed_fields)  # fmt: skip
    assert cls.tools[0].parameters["properties"] == {}


def add_folder(team, folder: Path, **kwargs):
    env = environment_create(team=team, user=None, name=folder.name, source_kind="folder", source_ref=str(folder),
                             **kwargs)  # fmt: skip
    return env.versions.get()


@pytest.fixture
def git_repo(tmp_path) -> tuple[str, Path]:
    """A git repository holding an environment in a sub-folder, as OpenEnv's repository does."""
    repo = tmp_path / "openenv-like"
    shutil.copytree(FIXTURE_ENVS / "metadata_maze", repo / "envs" / "corridor_env")
    run = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", "main")
    run("-c", "user.email=t@example.com", "-c", "user.name=t", "add", "-A")
    run("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "corridor")
    return f"file://{repo}", repo


def commit_all(repo: Path, message: str) -> str:
    for args in (["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def test_a_git_source_pins_its_commit_and_a_new_commit_is_a_new_version(acme, git_repo):
    url, repo = git_repo
    first_commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    env = environment_create(team=acme, user=None, name="corridor", source_kind="git", source_ref=url,
                             git_ref="main", git_subdir="envs/corridor_env")  # fmt: skip
    first = env.versions.get()
    assert first.pinned_ref == f"git:{first_commit}"
    assert [t["name"] for t in first.tools] == ["step"]
    with pytest.raises(ValidationError) as same:
        version_add(environment=env, user=None, source_kind="git", source_ref=url, label="again", git_ref="main",
                    git_subdir="envs/corridor_env")  # fmt: skip
    assert "already pins commit" in same.value.message_dict["git_ref"][0]
    app = repo / "envs" / "corridor_env" / "server" / "app.py"
    app.write_text(app.read_text().replace('"Find the exit."', '"Find the way out."'))
    second_commit = commit_all(repo, "new words")
    second = version_add(environment=env, user=None, source_kind="git", source_ref=url, label="2", git_ref="main",
                         git_subdir="envs/corridor_env")  # fmt: skip
    assert second.pinned_ref == f"git:{second_commit}"
    # The first version still runs its own commit, whatever the branch says now.
    assert version_testdrive(version=first, tool="step", arguments={"direction": "left"}).reset["observation"][
        "message"] == "Find the exit."  # fmt: skip
    assert version_testdrive(version=second, tool="step", arguments={"direction": "left"}).reset["observation"][
        "message"] == "Find the way out."  # fmt: skip


def test_a_git_source_that_is_not_there_is_a_field_error(acme, git_repo):
    url, _ = git_repo
    with pytest.raises(ValidationError) as refused:
        environment_create(team=acme, user=None, name="nope", source_kind="git", source_ref=url, git_ref="nope",
                           git_subdir="envs/corridor_env")  # fmt: skip
    assert "no branch, tag or commit 'nope'" in refused.value.message_dict["source_ref"][0]
    with pytest.raises(ValidationError) as missing:
        environment_create(team=acme, user=None, name="nope", source_kind="git", source_ref=url, git_ref="main",
                           git_subdir="envs/elsewhere")  # fmt: skip
    assert "has no folder 'envs/elsewhere'" in missing.value.message_dict["source_ref"][0]


def test_env_add_from_the_command_line(acme, git_repo):
    url, _ = git_repo
    out = StringIO()
    call_command("env", "add", "--git", url, "--ref", "main", "--subdir", "envs/corridor_env", "--name", "corridor",
                 "--fixed", 'direction="right"', "--env", "MOOD=calm", "--json", stdout=out)  # fmt: skip
    result = json.loads(out.getvalue())
    version = result["version"]
    assert result["environment"] == "corridor"
    assert version["pinned_ref"].startswith("git:") and version["seeding"] == "honoured"
    assert version["capacity_measured"] == 64 and version["settings"] == {
        "env": {"MOOD": "calm"},
        "fixed": {"direction": "right"},
    }
    assert version["dependencies"]["status"] == "none"
    with pytest.raises(CommandError, match="'speed' is not an argument"):
        call_command("env", "add", "--folder", str(FIXTURE_ENVS / "mcp_vault"), "--fixed", "speed=1", "--json",
                     stdout=StringIO())  # fmt: skip


def test_trust_checks_use_the_real_mcp_tools(acme):
    version = add(acme, "mcp_vault")
    report = trust_check_run(report=TrustReport.objects.create(version=version))
    assert report.state == "done", report.error
    by_name = {r["name"]: r for r in report.results}
    assert by_name["reward_integrity"]["status"] == "passed", by_name["reward_integrity"]
    assert by_name["seed_determinism"]["status"] == "passed", by_name["seed_determinism"]


def test_the_reward_a_version_uses_is_declared_chosen_or_the_sum_and_its_page_says_why(acme, alice, client_for):
    rubric = add(acme, "rubric_guess")  # its openenv.yaml: `reward: {kind: environment}`
    assert rubric.reward_rule.as_dict() == {"kind": "environment", "field": "reward", "source": "declared"}
    plain = add(acme, "metadata_maze")
    assert plain.reward_rule.kind == "sum" and "reward" not in plain.settings
    final = add(acme, "rubric_guess", slug="rubric-final", settings={"reward": "final"})
    assert final.reward_rule.as_dict() == {"kind": "final", "field": "reward", "source": "chosen"}
    with pytest.raises(ValidationError) as refused:
        add(acme, "rubric_guess", slug="rubric-bad", settings={"reward": {"kind": "environment", "field": "score"}})
    assert "'score' is not an observation field" in refused.value.message_dict["reward"][0]

    page = client_for(alice).get(f"/envs/{rubric.environment.pk}/").content.decode()
    assert "the environment&#x27;s own reward (its rubric)" in page and "declared in its openenv.yaml" in page
    # Saving other settings keeps what the environment declared; a user's choice replaces it.
    url = f"/envs/{rubric.environment.pk}/versions/{rubric.pk}/settings/"
    client_for(alice).post(url, {"observation_fields": "message, hint"})
    rubric.refresh_from_db()
    assert rubric.reward_rule.source == "declared" and rubric.settings["observation_fields"] == ["message", "hint"]
    client_for(alice).post(url, {"reward": "sum"})
    rubric.refresh_from_db()
    assert rubric.reward_rule.as_dict() == {"kind": "sum", "field": "reward", "source": "chosen"}
    client_for(alice).post(url, {"reward": "environment", "reward_field": "guesses_left"})
    rubric.refresh_from_db()
    assert rubric.reward_rule.as_dict() == {"kind": "environment", "field": "guesses_left", "source": "chosen"}

    out = StringIO()
    call_command("env", "add", "--folder", str(FIXTURE_ENVS / "rubric_guess"), "--slug", "rubric-cli",
                 "--reward", "final", "--json", stdout=out)  # fmt: skip
    assert json.loads(out.getvalue())["version"]["reward"] == {"kind": "final", "field": "reward", "source": "chosen"}


def test_a_verifiers_environment_is_converted_by_openenvs_importer_and_its_package_named_when_it_cannot_install(
    acme, tmp_path, monkeypatch
):
    # A Prime Intellect Verifiers environment (load_environment in a module that imports verifiers), never imported
    # by us: OpenEnv's importer makes it an OpenEnv folder whose server needs the `verifiers` package. This machine's
    # package index is cut off here (a cluster node without one), so the install fails and the add says which
    # package and why; nothing is saved.
    from envs.imported import detected_framework, openenv_folder

    source = FIXTURE_ENVS.parent / "frameworks" / "verifiers_quiz"
    framework, found = detected_framework(source)
    assert (framework, [d.qualified_name for d in found]) == ("verifiers", ["quiz:load_environment"])
    generated = openenv_folder(source, cache_dir=tmp_path)
    assert (generated / "server" / "app.py").exists() and (generated / "openenv.yaml").exists()
    assert openenv_folder(source, cache_dir=tmp_path) == generated, "generated once per content"
    assert "verifiers>=0.1.14" in (generated / "server" / "requirements.txt").read_text()

    empty = tmp_path / "no-wheels"
    empty.mkdir()
    for name, value in {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty), "UV_OFFLINE": "1",
                        "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_FIND_LINKS": str(empty)}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as refused:
        environment_create(team=acme, user=None, name="quiz", source_kind="folder", source_ref=str(source))
    message = refused.value.message_dict["source_ref"][0]
    assert "This verifiers environment runs with verifiers>=0.1.14, which could not be installed" in message, message
    assert not Environment.objects.exists()


def test_a_folder_of_no_framework_says_what_it_lacks(acme, tmp_path):
    (tmp_path / "notes.py").write_text("print('hello')\n")
    with pytest.raises(ValidationError) as refused:
        environment_create(team=acme, user=None, name="notes", source_kind="folder", source_ref=str(tmp_path))
    assert "nor an environment OpenEnv's importers convert (ORS, Verifiers)" in refused.value.message_dict[
        "source_ref"][0]  # fmt: skip


def test_a_server_with_no_socket_is_added_through_its_mcp_tools_and_test_driven_over_http(acme, alice, charlie, globex,
                                                                                         client_for):  # fmt: skip
    # mcp_http_vault is written as RFC 003's HTTP template is (OpenEnv's calendar): no /ws, no /schema, MCP on
    # POST /mcp, one tenant per x-database-id; its read_dial calls its own API at the port given with `{port}`.
    version = add(acme, "mcp_http_vault", settings={"env": {"VAULT_SELF_URL": "http://127.0.0.1:{port}"}})
    assert (version.mcp, version.transport) == (True, "http")
    assert {t["name"] for t in version.tools} == {"try_code", "read_dial"}
    drive = version_testdrive(version=version, tool="try_code", arguments={"code": 4}, seed=3)
    assert drive.error is None and drive.step["result"] in {"higher", "lower", "open"}
    dial = version_testdrive(version=version, tool="read_dial", arguments={})
    assert dial.error is None and dial.step["result"] == "the dial goes from 0 to 9"
    refused = version_testdrive(version=version, tool="try_code", arguments={"code": 42})
    assert refused.error == "the tool failed: the dial only has 0 to 9"

    page = client_for(alice).get(f"/envs/{version.environment.pk}/").content.decode()
    assert f'id="transport-{version.pk}"' in page and "over HTTP" in page

    def api_get(user, team):
        token = token_create(user=user, team=team, name="test", scope="read")[1]
        return client_for(user).get(f"/api/v1/environments/{version.environment.pk}",
                                    HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip

    shown = api_get(alice, acme).json()["versions"][0]
    assert (shown["transport"], shown["mcp"]) == ("http", True)
    assert api_get(charlie, globex).status_code == 404


def test_a_version_offers_a_model_the_tools_it_chose_and_keeps_the_others_on_its_server(acme, alice, bob, charlie,
                                                                                      client_for):  # fmt: skip
    # A server with dozens of long tools (OpenEnv's calendar: 37) outgrows a small model before its first call; the
    # version offers a model the few a task needs, and trust probes and test drives still reach every tool.
    from webapp.catalog.environment_class import version_env_class

    out = StringIO()
    call_command("env", "add", "--folder", str(FIXTURE_ENVS / "mcp_vault"), "--tools", "read_dial", "--team", "acme",
                 "--json", stdout=out)  # fmt: skip
    version = Environment.objects.get(slug=json.loads(out.getvalue())["environment"]).versions.get()
    assert version.settings["offered_tools"] == ["read_dial"]
    assert [t["name"] for t in version.offered_tools] == ["read_dial"] and len(version.tools) == 2
    env_class = version_env_class(version, endpoints=["ws://127.0.0.1:1"], step_timeout=5)
    assert [t.name for t in env_class.tools] == ["read_dial"] and not hasattr(env_class, "try_code")
    assert version_testdrive(version=version, tool="try_code", arguments={"code": 4}, seed=3).error is None

    page = client_for(alice).get(f"/envs/{version.environment.pk}/").content.decode()
    assert f'id="offered-{version.pk}"' in page and "1 of 2" in page and "not offered" in page
    assert client_for(charlie).get(f"/envs/{version.environment.pk}/").status_code == 404

    # Bob widens it from the settings form; a name the server does not list is a field error and changes nothing.
    url = f"/envs/{version.environment.pk}/versions/{version.pk}/settings/"
    client_for(bob).post(url, {"offered_tools": "read_dial, try_doors"})
    version.refresh_from_db()
    assert version.settings["offered_tools"] == ["read_dial"]
    refused = client_for(bob).post(url, {"offered_tools": "read_dial, try_doors"}, follow=True).content.decode()
    assert "&#x27;try_doors&#x27; is not one of this server&#x27;s tools (try_code, read_dial)" in refused
    client_for(bob).post(url, {"offered_tools": "try_code,read_dial"})
    version.refresh_from_db()
    assert version.settings["offered_tools"] == ["try_code", "read_dial"]  # the server's order
    with pytest.raises(CommandError, match="'dial' is not one of this server's tools"):
        call_command("env", "add", "--folder", str(FIXTURE_ENVS / "mcp_vault"), "--slug", "vault-2", "--tools", "dial",
                     "--team", "acme", "--json", stdout=StringIO())  # fmt: skip
    assert not Environment.objects.filter(slug="vault-2").exists()
