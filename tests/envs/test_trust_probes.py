"""Each planted fault is caught by its probe; the clean twin and the three built-ins pass every probe."""

from __future__ import annotations

import httpx
import pytest

from envs.tools import tools_from_action_schema
from envs.trust.probes import (
    FAILED,
    PASSED,
    ProbeContext,
    probe_capacity,
    probe_clean_reset,
    probe_hidden_state,
    probe_reward_integrity,
    probe_session_isolation,
    probe_timeouts,
    run_probes,
)
from tests.envs.conftest import builtin_source, fixture_source

CAPACITY = 4


def context_for(deployment, step_timeout: float = 3.0) -> ProbeContext:
    endpoint = deployment.endpoints[0]
    schema = httpx.get(endpoint + "/schema").json()
    return ProbeContext(
        endpoint=endpoint, tools=tools_from_action_schema(schema["action"]), capacity=CAPACITY,
        step_timeout=step_timeout, observation_schema=schema["observation"],
    )  # fmt: skip


@pytest.fixture
def probe_context(process_provider):
    deployments = []

    def make(source):
        deployments.append(process_provider.provision(source))
        return context_for(deployments[-1])

    yield make
    for deployment in deployments:
        process_provider.teardown(deployment)


@pytest.mark.parametrize(
    ("fault", "probe"),
    [
        ("leaky_global", probe_session_isolation),
        ("unclean_reset", probe_clean_reset),
        ("text_reward", probe_reward_integrity),
        ("exposed_secret", probe_hidden_state),
        ("lying_capacity", probe_capacity),
        ("hanging_step", probe_timeouts),
    ],
)
def test_each_planted_fault_is_caught_by_its_probe(probe_context, fault, probe):
    ctx = probe_context(fixture_source(f"beacon_{fault}", capacity=CAPACITY))
    result = probe(ctx)
    assert result.status == FAILED, result
    assert result.evidence


@pytest.mark.parametrize("fault", ["leaky_global", "unclean_reset", "text_reward", "exposed_secret"])
def test_a_fault_does_not_trip_unrelated_probes_into_passing_it(probe_context, fault):
    """The same probe passes on the clean twin, so it is the fault that fails it, not the probe."""
    probe = {"leaky_global": probe_session_isolation, "unclean_reset": probe_clean_reset,
             "text_reward": probe_reward_integrity, "exposed_secret": probe_hidden_state}[fault]  # fmt: skip
    assert probe(probe_context(fixture_source("beacon_clean", capacity=CAPACITY))).status == PASSED


def test_the_clean_twin_passes_every_probe(probe_context):
    results = run_probes(probe_context(fixture_source("beacon_clean", capacity=CAPACITY)))
    assert [(r.name, r.status) for r in results] == [(r.name, PASSED) for r in results], results
    assert len(results) == 7


@pytest.mark.parametrize("slug", ["guess-number", "word-guess", "grid-catch"])
def test_the_builtin_environments_pass_every_probe(probe_context, slug):
    results = run_probes(probe_context(builtin_source(slug, capacity=CAPACITY)))
    failures = [r for r in results if r.status != PASSED]
    assert failures == [], failures


def test_a_declared_stochastic_environment_is_reported_as_such_not_failed(probe_context):
    from dataclasses import replace

    from envs.trust.probes import NOT_APPLICABLE, probe_seed_determinism

    ctx = probe_context(fixture_source("beacon_stochastic", capacity=CAPACITY))
    assert probe_seed_determinism(replace(ctx, stochastic=True)).status == NOT_APPLICABLE
    assert probe_seed_determinism(ctx).status == FAILED  # the same randomness, undeclared


def test_the_catalog_reads_the_declaration_from_the_manifest(acme):
    from tests.envs.conftest import FIXTURE_ENVS
    from webapp.catalog.services import environment_create

    env = environment_create(team=acme, user=None, name="dice", source_kind="folder",
                             source_ref=str(FIXTURE_ENVS / "beacon_stochastic"))  # fmt: skip
    assert env.versions.get().server_metadata["stochastic"] is True


def test_hidden_state_evidence_names_the_field_and_says_what_to_do(probe_context):
    result = probe_hidden_state(probe_context(fixture_source("beacon_exposed_secret", capacity=CAPACITY)))
    assert result.status == FAILED
    assert result.evidence[0].startswith("state.target (hidden): observation field metadata.target = ")
    assert "in every seed" in result.evidence[0]
    assert result.evidence[-1].startswith("What it means:") and "fix:" in result.evidence[-1]
