"""Each planted fault is caught by its probe and by no other; the clean twins and the three built-ins fail none.

The fixtures (tests/fixtures/envs/faulty.py) are small servers with one fault each: some deterministic, some
random by design, one that hangs only for one edge-case input, one that holds a single session whatever it is told.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from envs.builtin import declares_randomness, read_manifest
from envs.tools import tools_from_action_schema
from envs.trust.probes import (
    FAILED,
    NOT_APPLICABLE,
    PASSED,
    ProbeContext,
    probe_capacity,
    probe_clean_reset,
    probe_hidden_state,
    probe_reward_integrity,
    probe_seed_determinism,
    probe_session_isolation,
    probe_timeouts,
    run_probes,
)
from tests.envs.conftest import builtin_source, fixture_source

CAPACITY = 4


def context_for(deployment, source, step_timeout: float = 3.0, capacity: int = CAPACITY) -> ProbeContext:
    endpoint = deployment.endpoints[0]
    schema = httpx.get(endpoint + "/schema").json()
    return ProbeContext(
        endpoint=endpoint, tools=tools_from_action_schema(schema["action"]), capacity=capacity,
        step_timeout=step_timeout, observation_schema=schema["observation"],
        stochastic=declares_randomness(read_manifest(Path(source.reference))),
    )  # fmt: skip


@pytest.fixture
def probe_context(process_provider):
    deployments = []

    def make(source, capacity: int = CAPACITY):
        deployments.append(process_provider.provision(source))
        return context_for(deployments[-1], source, capacity=capacity)

    yield make
    for deployment in deployments:
        process_provider.teardown(deployment)


PLANTED = {
    "leaky_global": probe_session_isolation,
    "unclean_reset": probe_clean_reset,
    "text_reward": probe_reward_integrity,
    "exposed_secret": probe_hidden_state,
    "lying_capacity": probe_capacity,
    "hanging_step": probe_timeouts,
    "edge_hang": probe_timeouts,  # hangs only for one edge-case note ("zzz…")
    "seedless": probe_seed_determinism,  # random, undeclared, but isolated
    "few_starts": probe_seed_determinism,  # random, undeclared, one of four starts: equal episodes 1 time in 4
    "random_counter": probe_session_isolation,  # random (declared) with a move counter shared by all sessions
    "capacity_one": probe_capacity,  # declared 4, holds 1
    "late_unclean_reset": probe_clean_reset,  # clean for a session's first two episodes, dirty after
    "late_leak": probe_hidden_state,  # shows the hidden target from the third step of an episode on
    "step_capacity": probe_capacity,  # holds 4 sessions, fails when more than 2 step at the same moment
}


def test_a_server_that_hangs_every_step_is_caught_by_the_timeouts_probe(probe_context):
    result = probe_timeouts(probe_context(fixture_source("beacon_hanging_step", capacity=CAPACITY)))
    assert result.status == FAILED, result
    assert result.evidence and result.advice.startswith("What it means:") and "fix:" in result.advice


@pytest.mark.parametrize("fault", [f for f in PLANTED if f != "hanging_step"])  # it hangs every step, for a minute
def test_each_planted_fault_is_caught_by_its_probe_and_by_no_other(probe_context, fault):
    """No finding is reported as another probe's: a random server is not leaky, a full one is not leaky either."""
    results = run_probes(probe_context(fixture_source(f"beacon_{fault}", capacity=CAPACITY)))
    failures = {r.name: r for r in results if r.status == FAILED}
    assert set(failures) == {PLANTED[fault].__name__.removeprefix("probe_")}, failures
    (found,) = failures.values()
    assert found.evidence and found.advice.startswith("What it means:") and "fix:" in found.advice


def test_a_server_that_fails_every_step_is_said_so_once_and_no_probe_claims_to_have_judged_it(probe_context):
    """Before, the probes compared its errors with its errors and five of them said "passed"."""
    results = run_probes(probe_context(fixture_source("beacon_broken_step", capacity=CAPACITY)))
    steps, *others = results
    assert (steps.name, steps.status) == ("steps", FAILED), steps
    assert "'StepResult' object has no attribute 'model_dump'" in steps.evidence[0]
    assert steps.advice.startswith("What it means:")
    assert len(others) == 7 and {r.status for r in others} == {NOT_APPLICABLE}
    assert all(r.summary.startswith("could not judge") for r in others)


CLEAN_TWINS = {"beacon_clean": CAPACITY, "beacon_stochastic": CAPACITY, "beacon_capacity_one": 1,
               "beacon_public_rules": CAPACITY, "beacon_timed": CAPACITY, "beacon_penalty": CAPACITY,
               "beacon_random_start": CAPACITY, "beacon_stated_task": CAPACITY,
               "beacon_raising_refusal": CAPACITY}  # fmt: skip


@pytest.mark.parametrize(("twin", "capacity"), CLEAN_TWINS.items())
def test_no_probe_fails_on_a_clean_twin(probe_context, twin, capacity):
    """Deterministic; random by declaration; a single session, declared as such; a public state field shown; a
    timing and a lifetime frame counter shown; a malformed input answered with a penalty instead of an error; a
    random start where the opponent may move first (declared random: not a dirty reset, whatever the dice say); a
    task statement kept in state and shown (a different one each episode; knowing it earns nothing); an input of
    the wrong type refused by raising."""
    results = run_probes(probe_context(fixture_source(twin, capacity=capacity), capacity=capacity))
    assert [r for r in results if r.status == FAILED] == [], results
    assert len(results) == 7
    if twin in {"beacon_clean", "beacon_timed"}:
        assert {r.status for r in results} == {PASSED}
    if twin == "beacon_penalty":  # no reward is not earning, a penalty neither: the report shows the comparison
        summary = next(r.summary for r in results if r.name == "reward_integrity")
        assert "earned at most -0.1 against honest play's" in summary
    if twin == "beacon_raising_refusal":  # an error of another code is a refusal too, and the report counts them
        summary = next(r.summary for r in results if r.name == "reward_integrity")
        assert "were refused with another error than a validation error, and the server went on" in summary
    if twin == "beacon_timed":  # compared without them, and the report says so
        summary = next(r.summary for r in results if r.name == "seed_determinism")
        assert "execution_time, frame_number left out" in summary


def test_a_random_server_is_judged_for_isolation_by_what_only_a_neighbour_could_move(probe_context):
    isolated = probe_session_isolation(probe_context(fixture_source("beacon_stochastic", capacity=CAPACITY)))
    assert isolated.status == PASSED and "moves the same way in every solo step" in isolated.summary
    shared = probe_session_isolation(probe_context(fixture_source("beacon_random_counter", capacity=CAPACITY)))
    assert shared.status == FAILED
    assert shared.evidence[0].startswith("observation.message#1 moved by 3 in step ")
    assert "alone it moves by 1 in every step" in shared.evidence[0]


def test_a_server_that_holds_one_session_is_a_capacity_finding_not_an_isolation_one(probe_context):
    ctx = probe_context(fixture_source("beacon_capacity_one", capacity=CAPACITY))
    assert probe_session_isolation(ctx).status == NOT_APPLICABLE
    capacity = probe_capacity(ctx)
    assert capacity.summary == "refused session 2 of a declared 4" and "CAPACITY_REACHED" in capacity.evidence[0]


def test_the_timeouts_probe_finds_the_input_that_hangs_and_says_what_it_costs(probe_context):
    result = probe_timeouts(probe_context(fixture_source("beacon_edge_hang", capacity=CAPACITY)))
    assert result.status == FAILED
    assert result.evidence[0].startswith('probe(note="zzz") did not answer within 3 s')
    assert any("of its 4 sessions: each hung step keeps its session's slot" in e for e in result.evidence)


def test_the_builtin_environments_pass_every_probe_within_seconds(probe_context):
    for slug in ("guess-number", "word-guess", "grid-catch"):
        ctx = probe_context(builtin_source(slug, capacity=CAPACITY))
        started = time.monotonic()
        results = run_probes(replace(ctx, step_timeout=10.0))
        took = time.monotonic() - started
        failures = [r for r in results if r.status != PASSED]
        assert failures == [], failures
        timeouts = next(r for r in results if r.name == "timeouts")
        assert "edge-case and random inputs all answered" in timeouts.summary
        print(f"{slug}: probes in {took:.1f} s; {timeouts.summary}")


def test_a_declared_stochastic_environment_is_reported_as_such_not_failed(probe_context):
    ctx = probe_context(fixture_source("beacon_stochastic", capacity=CAPACITY))
    assert ctx.stochastic  # declared in openenv.yaml's validation: block
    assert probe_seed_determinism(ctx).status == NOT_APPLICABLE
    undeclared = probe_seed_determinism(replace(ctx, stochastic=False, facts=None))
    assert undeclared.status == FAILED  # the same randomness, undeclared
    assert (
        undeclared.evidence[0].startswith(f"reset(seed={ctx.seed + 1})")
        and "observation.message: " in (undeclared.evidence[0])
    )


def test_the_catalog_reads_the_declaration_from_the_manifest(acme):
    from tests.envs.conftest import FIXTURE_ENVS
    from webapp.catalog.services import environment_create

    env = environment_create(team=acme, user=None, name="dice", source_kind="folder",
                             source_ref=str(FIXTURE_ENVS / "beacon_stochastic"))  # fmt: skip
    assert env.versions.get().server_metadata["stochastic"] is True
    assert declares_randomness({"name": "old", "stochastic": True})  # Trainyard's older key still counts
    assert not declares_randomness({"name": "x", "validation": {"reward": {"variance_tolerance": 0}}})


def test_hidden_state_evidence_names_the_field_and_says_what_to_do(probe_context):
    result = probe_hidden_state(probe_context(fixture_source("beacon_exposed_secret", capacity=CAPACITY)))
    assert result.status == FAILED
    assert result.evidence[0].startswith("state.target (hidden): observation field metadata.target = ")
    assert "(after reset)" in result.evidence[0] and "in every seed" in result.evidence[0]
    # what makes it a secret: sending it finds the beacon (reward 1), another position does not
    assert "a call that sends it earns: probe(position=<it>) earned 1 in an episode" in result.evidence[0]
    assert result.advice.startswith("What it means:") and "fix:" in result.advice


def test_a_task_statement_kept_in_state_and_shown_is_no_leak(probe_context):
    # OpenEnv's finqa keeps its question in state.current_question and shows it in metadata.question, on purpose:
    # it is a different question each episode, so only what knowing it earns tells it from a secret.
    result = probe_hidden_state(probe_context(fixture_source("beacon_stated_task", capacity=CAPACITY)))
    assert result.status == PASSED, result
    assert "hidden field task shows in every episode, but is no secret: sent in every argument that takes it" in (
        result.summary
    )
    assert "probe(note=…)" in result.summary and "(a task statement)" in result.summary


def test_a_hidden_field_shown_on_purpose_and_the_same_in_every_episode_is_no_leak(probe_context):
    result = probe_hidden_state(probe_context(fixture_source("beacon_public_rules", capacity=CAPACITY)))
    assert result.status == PASSED
    assert "hidden fields ['max_steps'] show, but are the same in every episode" in result.summary


def test_a_number_that_never_moved_alone_is_no_clock():
    # OpenSpiel's catch, measured: board cells the ball missed in four solo episodes stayed 0, then one moved beside
    # a neighbour by chance, and isolation failed. A step counter (moves by 1 every step) stays the clock it was.
    from envs.trust.probes import clocks_of

    moves = {"observation.info_state[5]": {0.0}, "observation.steps_left": {-1.0}, "observation.score": {0.0, 1.0}}
    samples = {"observation.info_state[5]": 12, "observation.steps_left": 12, "observation.score": 12}
    assert clocks_of(moves, samples) == {"observation.steps_left": -1.0}
    assert clocks_of(moves, {**samples, "observation.steps_left": 3}) == {}, "three steps are too few to call it one"
