"""A turn's tool calls of all rollouts run together; each rollout's own calls keep their order."""

from __future__ import annotations

import hashlib
import inspect

import httpx
import pytest

from envs.adapter import tool_env_class
from envs.tools import tools_from_action_schema
from tests.envs.conftest import fixture_source
from workers.training.concurrent_tools import TRL_VERSION, TurnDispatcher

# The source of the TRL loop the dispatcher was written against. If TRL changes it, this fails loudly: re-read
# GRPOTrainer._tool_call_loop, check the dispatcher's assumptions, then update the hash and the pin.
TOOL_LOOP_SHA256 = "1c501f7f3b469f7e493cb90e2a85aef99ef66052cfd8927d1c200977ac559388"


@pytest.fixture(scope="module")
def slow_class(process_provider):
    deployment = process_provider.provision(fixture_source("slow_step", capacity=16))
    schema = httpx.get(deployment.endpoints[0] + "/schema").json()["action"]
    yield tool_env_class(name="slow", tools=tools_from_action_schema(schema), endpoints=deployment.endpoints)
    process_provider.teardown(deployment)


def assistant_turn(*calls):
    return {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": name, "arguments": args}} for name, args in calls]}  # fmt: skip


def test_the_first_call_of_a_turn_runs_every_rollouts_calls(slow_class):
    envs = [slow_class() for _ in range(6)]
    for env in envs:
        env.reset()
    completions = [[assistant_turn(("sleep", {"seconds": 0.05 * i}))] for i in range(6)]
    dispatcher = TurnDispatcher(envs, completions)
    slow_class.dispatcher = dispatcher
    try:
        results = []
        for i, env in enumerate(envs):
            results.append(env.sleep(seconds=0.05 * i))
            completions[i].append({"role": "tool", "name": "sleep", "content": results[-1]})
    finally:
        slow_class.dispatcher = None
    assert dispatcher.turns == 1 and dispatcher.prefetched_calls == 6
    assert [f'"slept": {0.05 * i}' in r for i, r in enumerate(results)] == [True] * 6
    assert all(len(env.episode.events) == 1 for env in envs)
    for env in envs:
        env._close()


def test_a_rollouts_calls_stay_in_order(slow_class):
    env = slow_class()
    env.reset()
    completions = [[assistant_turn(("sleep", {"seconds": 0.2}), ("sleep", {"seconds": 0.0}))]]
    slow_class.dispatcher = dispatcher = TurnDispatcher([env], completions)
    try:
        first = env.sleep(seconds=0.2)
        second = env.sleep(seconds=0.0)
    finally:
        slow_class.dispatcher = None
    assert '"slept": 0.2' in first and '"slept": 0.0' in second
    assert dispatcher.prefetched_calls == 2
    env._close()


def test_a_call_that_was_not_prefetched_still_steps(slow_class):
    env = slow_class()
    env.reset()
    completions = [[assistant_turn(("sleep", {"seconds": 0.0}))]]
    slow_class.dispatcher = TurnDispatcher([env], completions)
    try:
        assert '"slept": 0.1' in env.sleep(seconds=0.1)  # differs from the message: stepped directly
    finally:
        slow_class.dispatcher = None
    env._close()


def test_the_trainer_subclass_is_pinned_to_the_trl_loop_it_was_written_for():
    import trl
    from trl import GRPOTrainer

    assert trl.__version__ == TRL_VERSION
    source = inspect.getsource(GRPOTrainer._tool_call_loop)
    digest = hashlib.sha256(source.encode()).hexdigest()
    assert digest == TOOL_LOOP_SHA256, f"TRL's _tool_call_loop changed (sha256 {digest})"
    # What the dispatcher relies on: the loop reads each rollout's last assistant message from `completions`.
    assert "completions[idx_with_tool][-1]" in source
    assert 'sync_tool_dict[name](**function["arguments"])' in source
