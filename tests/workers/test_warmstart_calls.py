"""A warm start's synthetic episodes keep only calls the environment accepted, and it sends the ones an
observation offers: on an environment whose valid moves are a few strings that change with the position (like
OpenEnv's chess), schema-valid random words are all refused; the offered moves are accepted."""

from __future__ import annotations

import httpx
import pytest

from envs.adapter import tool_env_class
from envs.providers.process import ProcessProvider
from envs.tools import tools_from_action_schema
from tests.envs.conftest import fixture_source
from workers.models import warmstart
from workers.models.warmstart import CallTally, WarmStartError, play_episodes


@pytest.fixture(scope="module")
def legal_moves(tmp_path_factory):
    provider = ProcessProvider(log_dir=tmp_path_factory.mktemp("env-logs"))
    deployment = provider.provision(fixture_source("legal_moves"))
    schema = httpx.get(deployment.endpoints[0] + "/schema").json()["action"]
    yield tool_env_class(name="legal", tools=tools_from_action_schema(schema), endpoints=deployment.endpoints)
    provider.teardown(deployment)


def play(env_class, tally: CallTally) -> list[dict]:
    return play_episodes(env_class, prompt="Reach square 9.", count=24, seed=5, max_turns=3,
                         progress=lambda message, fraction: None, tally=tally)  # fmt: skip


def test_the_moves_an_observation_offers_are_sent_and_accepted(legal_moves):
    tally = CallTally()
    conversations = play(legal_moves, tally)
    assert tally.sent >= 24 and tally.share >= 0.9, (tally.sent, tally.accepted, tally.refused)
    for conversation in conversations:
        shown = conversation["messages"][0]["content"]  # the reset observation, then each tool answer in turn
        for message in conversation["messages"][1:]:
            if message.get("tool_calls"):
                move = warmstart.json.loads(message["tool_calls"][0]["function"]["arguments"])["move"]
                assert f'"{move}"' in shown, "every kept call was a legal move of the position it was played in"
            elif message["role"] == "tool":
                shown = message["content"]


def test_a_warm_start_that_the_environment_refuses_says_which_tool_and_arguments(legal_moves, monkeypatch):
    # Without the offered moves, schema-valid words are what chess was sent ("river", "stone"): each is answered
    # with a penalty and the same board, which is a refusal; the warm start refuses to make a model of that.
    monkeypatch.setattr(warmstart, "offered_arguments", lambda tool, observation, rng: None)
    tally = CallTally()
    with pytest.raises(WarmStartError) as refused:
        play(legal_moves, tally)
    message = str(refused.value)
    assert f"the environment accepted {tally.accepted} of {tally.sent} calls" in message
    assert "move was refused" in message and "refused: the environment answered with a penalty (-0.1)" in message
