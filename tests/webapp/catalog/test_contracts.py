"""A version pins its contract (schemas, MCP tools). A URL whose server changed under the version is refused when a
run provisions it, with the difference; `trust_check --compare-url` tells whether production serves the same."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from envs.providers import EnvSource
from envs.providers.process import ProcessProvider
from tests.envs.conftest import FIXTURE_ENVS, builtin_source
from webapp.catalog.contracts import version_contract_hash
from webapp.catalog.models import EnvironmentVersion
from webapp.catalog.services import environment_create
from webapp.runs.models import Status
from webapp.runs.services import run_create
from workers.worker.provisioning import deployments_teardown
from workers.worker.runs import RunExecution


@pytest.fixture
def two_servers(tmp_path):
    """A beacon server (the version's) and a word-guess server (what the URL serves after a redeploy)."""
    provider = ProcessProvider(log_dir=tmp_path)
    deployments = [provider.provision(EnvSource("folder", str(FIXTURE_ENVS / "beacon_clean"), capacity=8)),
                   provider.provision(builtin_source("word-guess", capacity=8))]  # fmt: skip
    yield [d.endpoints[0] for d in deployments]
    for deployment in deployments:
        provider.teardown(deployment)


def provisioned(run) -> str:
    """A worker's provisioning of `run` (claim, then its environments), torn down again: "" or why the run fails."""
    execution = RunExecution(run.pk)
    assert execution.claim("test-worker:1")
    try:
        return execution.provision()
    finally:
        deployments_teardown(execution.deployments, execution.providers, what=execution.what)


@pytest.fixture
def url_version(acme, two_servers):
    with override_settings(TRAINYARD_TRUST_ON_ADD=False):
        env = environment_create(team=acme, user=None, name="beacon", source_kind="url", source_ref=two_servers[0])
    return env.versions.get()


def test_a_version_pins_the_hash_of_its_contract(url_version):
    assert len(url_version.contract_hash) == 64
    assert url_version.contract_hash == version_contract_hash(EnvironmentVersion(
        action_schema=url_version.action_schema, observation_schema=url_version.observation_schema,
        state_schema=url_version.state_schema, mcp=False,
    ))  # fmt: skip


def test_a_run_on_a_url_that_now_serves_another_contract_is_refused_with_the_difference(acme, url_version,
                                                                                         two_servers):  # fmt: skip
    run = run_create(team=acme, user=None, env_version=url_version, start=False, provider="url",
                     trust_override_reason="not checked: contract test")  # fmt: skip
    EnvironmentVersion.objects.filter(pk=url_version.pk).update(source_ref=two_servers[1])  # redeployed under us
    run.refresh_from_db()

    reason = provisioned(run)

    assert reason.startswith(f"the environment's server no longer matches {url_version}")
    lines = reason.splitlines()[1:]
    assert "- action.properties.position (was " in "\n".join(lines)  # beacon's field, gone
    assert any(line.startswith("+ action.properties.") for line in lines)  # word-guess's field, new


def test_a_run_on_an_unchanged_url_records_the_tool_surface_it_trains_against(acme, url_version):
    run = run_create(team=acme, user=None, env_version=url_version, start=False, provider="url",
                     trust_override_reason="not checked: contract test")  # fmt: skip
    assert provisioned(run) == ""  # the contract check is what this test is about: no trainer after it

    run.refresh_from_db()
    assert run.status == Status.PROVISIONING
    assert run.deployment["contract_hash"] == url_version.contract_hash
    assert run.deployment["tools"] == [t["name"] for t in url_version.tools]


def test_compare_url_says_whether_production_serves_the_same_contract(acme, url_version, two_servers):
    out = StringIO()
    call_command("trust_check", "beacon", "--compare-url", two_servers[0], "--json", stdout=out)
    assert json.loads(out.getvalue())["same"] is True

    out = StringIO()
    with pytest.raises(CommandError, match="does not serve"):
        call_command("trust_check", "beacon", "--compare-url", two_servers[1] + "/", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["same"] is False and body["pinned_contract"] == url_version.contract_hash
    assert any(line.startswith("- action.properties.position") for line in body["differences"])


def test_compare_url_refuses_what_is_not_a_url(acme, url_version):
    with pytest.raises(CommandError, match="must be an http"):
        call_command("trust_check", "beacon", "--compare-url", "file:///etc/passwd")
