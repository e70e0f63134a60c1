"""Whose reward a run learns from: the sum of step rewards, the final step's, or the environment's own (an OpenEnv
rubric that scores only the end, read through the `get_reward` TRL calls), over real OpenEnv servers."""

from __future__ import annotations

import inspect

import httpx
import pytest

from envs.adapter import tool_env_class
from envs.rewards import RewardRule, RewardRuleError, declared_rule, detected_rule, reward_rule_check, step_credits
from envs.tools import tools_from_action_schema


def env_class_for(endpoint: str, rule: RewardRule | None = None):
    schema = httpx.get(endpoint + "/schema").json()["action"]
    return tool_env_class(name="rubric_guess", tools=tools_from_action_schema(schema), endpoints=[endpoint],
                          reward_rule=rule)  # fmt: skip


def play(env, *guesses: int) -> None:
    for guess in guesses:
        if env.episode.done:
            break
        env.guess(number=guess)


def test_an_environment_owned_reward_is_trls_get_reward_and_pays_only_the_end(served_fixture):
    cls = env_class_for(served_fixture("rubric_guess"), RewardRule(kind="environment", source="declared"))
    public = [name for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not name.startswith("_")]
    assert sorted(public) == ["get_reward", "guess", "reset"]  # TRL: a tool, reset, and the reward column
    env = cls()
    env.reset(seed=5)
    env.guess(number=1)
    assert env.episode.done is False and env.get_reward() == 0.0  # the rubric has not judged yet
    env.guess(number=16)
    assert env.episode.done
    won = env.episode.events[-1].observation["metadata"]["won"]
    assert env.get_reward() == (1.0 if won else 0.0)
    assert env._column_reward() is None  # Trainyard's own column stays out: no reward is counted twice
    env._close()


def test_a_won_game_pays_one_and_its_steps_carry_the_rubrics_credit(served_fixture):
    env = env_class_for(served_fixture("rubric_guess"), RewardRule(kind="environment"))()
    for seed in range(20):  # seeds until a two-guess game is won by its last guess (a guess within 5 wins)
        env.reset(seed=seed)
        play(env, 16, 8)
        if env.get_reward() == 1.0 and len(env.episode.events) == 2:
            break
    else:
        pytest.fail("no seed in 20 gave a game won on the second guess")
    first, last = env.episode.events
    assert (first.reward, last.reward) == (0.0, 1.0)
    assert (first.credit, last.credit) == (0.5, 1.0)  # what the server sent: the win discounted back one step
    env._close()


def test_the_final_reward_ignores_what_came_before(served):
    # guess-number pays only a correct guess; "final" reads the step that ended the episode, "sum" adds them all.
    endpoint = served("guess-number")
    final = env_class_for(endpoint, RewardRule(kind="final", source="chosen"))()
    final.reset(seed=3)
    low, high = 1, 16
    while not final.episode.done:
        guess = (low + high) // 2
        result = final.guess(number=guess)
        low, high = (guess + 1, high) if "higher" in result else (low, guess - 1) if "lower" in result else (low, high)
    assert final._episode_reward() == final.episode.events[-1].reward > 0
    assert final._column_reward() == final._episode_reward()  # paid through Trainyard's own column
    assert not hasattr(final, "get_reward")
    final.reset(seed=3)
    final.guess(number=40)  # out of range: answered, costs a guess, pays nothing
    assert final._episode_reward() == 0.0
    final._close()


def test_where_the_rule_comes_from():
    assert declared_rule({"name": "x", "reward": {"kind": "environment"}}) == RewardRule("environment", "reward",
                                                                                            "declared")  # fmt: skip
    assert declared_rule({"name": "x"}) is None
    carla = {"properties": {"reward": {}, "rubric_reward": {}, "done": {}}}
    assert detected_rule(carla) == RewardRule("environment", "rubric_reward", "detected")
    assert detected_rule({"properties": {"reward": {}}}) is None
    assert reward_rule_check("final").kind == "final"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("best", "'best' is not a reward kind"),
        ({"kind": "final", "field": "rubric_reward"}, "only an environment-owned reward"),
        ({"kind": "environment", "field": "score"}, "'score' is not an observation field"),
        ({"kind": "environment", "field": "a b"}, "not an observation field name"),
        ({"kind": "sum", "weight": 2}, "unknown reward key 'weight'"),
        (3, "the reward is a kind"),
    ],
)
def test_a_bad_rule_says_what_is_wrong(raw, message):
    with pytest.raises(RewardRuleError, match=message):
        reward_rule_check(raw, observation_fields={"reward", "message"})


def test_credits_are_read_only_when_the_server_sends_numbers():
    assert step_credits({"metadata": {"discounted_rewards": [0.9, 1]}}) == [0.9, 1.0]
    assert step_credits({"metadata": {"step_rewards": ["a"]}}) is None
    assert step_credits({"metadata": {}}) is None
