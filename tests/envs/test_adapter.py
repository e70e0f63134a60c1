"""The generic adapter: catalog tool schemas → a TRL environment_factory class over real OpenEnv servers."""

from __future__ import annotations

import inspect
import typing

import httpx
import pytest

from envs.adapter import ToolFailed, tool_env_class
from envs.tools import tools_from_action_schema


def env_class_for(endpoint: str, **kwargs):
    schema = httpx.get(endpoint + "/schema").json()["action"]
    return tool_env_class(name="probe", tools=tools_from_action_schema(schema), endpoints=[endpoint], **kwargs)


def test_tools_become_typed_documented_methods(served):
    cls = env_class_for(served("grid-catch"))
    move = cls.move
    assert list(inspect.signature(move).parameters) == ["self", "direction"]
    assert typing.get_args(typing.get_type_hints(move)["direction"]) == ("up", "down", "left", "right")
    assert "Args:\n    direction: Which way to move." in move.__doc__


def test_trl_sees_only_reset_and_the_tools(served):
    cls = env_class_for(served("guess-number"))
    public = [name for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not name.startswith("_")]
    assert sorted(public) == ["guess", "reset"]


def test_transformers_builds_the_json_schema_the_model_sees(served):
    from transformers.utils import get_json_schema

    schema = get_json_schema(env_class_for(served("guess-number")).guess)
    assert schema["function"]["name"] == "guess"
    assert schema["function"]["parameters"]["properties"]["number"]["type"] == "integer"


def test_an_episode_pays_what_the_environment_paid(served):
    env = env_class_for(served("guess-number"))()
    first = env.reset(seed=3, prompt="ignored: prompts never reach the environment")
    assert "You have 6 guesses" in first
    low, high = 1, 16
    while not env.episode.done:
        guess = (low + high) // 2
        result = env.guess(number=guess)
        if "higher" in result:
            low = guess + 1
        elif "lower" in result:
            high = guess - 1
    assert 0.5 <= env._episode_reward() <= 1.0
    assert env._episode_reward() == sum(e.reward for e in env.episode.events)
    env._close()


def test_the_model_cannot_claim_a_reward(served):
    env = env_class_for(served("word-guess"))()
    env.reset(seed=1)
    env.guess_word(word="I win, reward=1.0")  # text that claims success earns nothing
    assert env._episode_reward() == 0.0
    env._close()


def test_a_refused_action_is_a_tool_error_not_a_crash(served):
    env = env_class_for(served("grid-catch"))()
    env.reset(seed=1)
    with pytest.raises(ToolFailed, match="VALIDATION_ERROR"):
        env.move(direction="north")
    assert env.episode.events[-1].error
    assert env.move(direction="up")  # the session still works
    env._close()


def test_bad_arguments_fail_before_any_step(served):
    env = env_class_for(served("guess-number"))()
    env.reset(seed=1)
    with pytest.raises(TypeError):
        env.guess(numbr=3)
    assert env.episode.events == []
    env._close()


def test_a_hung_step_is_cut_off_and_ends_the_episode(served_fixture):
    env = env_class_for(served_fixture("slow_step"), step_timeout=0.3)()
    env.reset()
    with pytest.raises(ToolFailed, match="took longer than"):
        env.sleep(seconds=5)
    assert env.episode.done and "took longer" in env.episode.error
    with pytest.raises(ToolFailed, match="episode is over"):
        env.sleep(seconds=0)
    env.reset()  # the next episode gets a fresh session
    assert env.sleep(seconds=0) is not None
    env._close()


def test_the_state_is_never_shown(served):
    env = env_class_for(served("guess-number"))()
    shown = env.reset(seed=9) + env.guess(number=1)
    assert "secret" not in shown
    env._close()


def test_instances_spread_over_replicas(process_provider):
    from tests.envs.conftest import builtin_source

    deployment = process_provider.provision(builtin_source("guess-number"), replicas=2)
    try:
        schema = httpx.get(deployment.endpoints[0] + "/schema").json()["action"]
        cls = tool_env_class(name="g", tools=tools_from_action_schema(schema), endpoints=deployment.endpoints)
        assert {cls().endpoint for _ in range(4)} == set(deployment.endpoints)
    finally:
        process_provider.teardown(deployment)


ACRONYMS = [("REPLAction", "repl"), ("DIPGAction", "dipg"), ("DMControlAction", "dm_control"),
            ("GuessNumberAction", "guess_number")]  # fmt: skip


@pytest.mark.parametrize(("title", "tool"), ACRONYMS)
def test_an_acronym_class_name_is_one_word_for_the_model(title, tool):
    # OpenEnv's REPL and DIPG environments were offered as `r_e_p_l` and `d_i_p_g`.
    schema = {"title": title, "type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
    assert [spec.name for spec in tools_from_action_schema(schema)] == [tool]


def test_a_penalty_that_changes_nothing_is_a_refused_call(served_fixture):
    # OpenEnv's chess answers an illegal move with -0.1 and the same board, no error: it counted as accepted.
    env = env_class_for(served_fixture("beacon_penalty"))()
    env.reset(seed=1)
    with pytest.raises(ToolFailed, match=r"refused: the environment answered with a penalty \(-0.1\)"):
        env.lenient_probe(position="river")
    refused = env.episode.events[-1]
    assert refused.error and refused.reward == -0.1  # the environment's penalty still counts in the reward
    assert "at 4" in env.lenient_probe(position=4)  # a legal position is accepted (and changes what the episode shows)
    assert env.episode.events[-1].error is None
    assert env._episode_reward() == pytest.approx(-0.1 + env.episode.events[-1].reward)
    env._close()


def test_required_arguments_come_first_whatever_order_the_schema_lists_them_in():
    # OpenEnv's calendar lists a required `calendarId` after optional fields: a Python signature cannot.
    from envs.tools import ToolSpec

    tool = ToolSpec(name="get_event", description="Get an event.", mcp=True, parameters={
        "type": "object", "required": ["calendarId", "eventId"],
        "properties": {"timeZone": {"type": "string"}, "calendarId": {"type": "string"},
                       "maxAttendees": {"type": "integer"}, "eventId": {"type": "string"}}})  # fmt: skip
    cls = tool_env_class(name="calendar", tools=[tool], endpoints=["http://127.0.0.1:9"])
    assert list(inspect.signature(cls.get_event).parameters) == ["self", "calendarId", "eventId", "timeZone",
                                                                 "maxAttendees"]  # fmt: skip


def test_a_penalty_that_only_counts_a_step_is_a_refused_call():
    # OpenEnv's maze answers a move into a wall with -0.75, the same position, and its step counter one higher.
    from envs.adapter import refused_by_penalty

    def maze(step: int, position: list[int], legal: list[int]) -> dict:
        return {"metadata": {"maze": [[0, 1], [0, 0]], "status": "playing", "step": step}, "legal_actions": legal,
                "current_position": position, "reward": -0.05, "done": False}  # fmt: skip

    assert refused_by_penalty(-0.75, maze(0, [0, 0], [3]), maze(1, [0, 0], [3]))
    assert not refused_by_penalty(-0.05, maze(0, [0, 0], [3]), maze(1, [1, 0], [2, 3]))  # it moved: a step's cost
    assert not refused_by_penalty(0.0, maze(0, [0, 0], [3]), maze(1, [0, 0], [3]))  # no penalty: not a refusal
    # A number named like a counter that is the state itself still counts ("score" is no step counter).
    assert not refused_by_penalty(-1.0, {"score": 3, "step_count": 1}, {"score": 2, "step_count": 2})


def test_a_move_the_game_refuses_in_its_own_words_is_a_refused_call(served_fixture):
    # OpenEnv's textarena (Wordle) answers a word guessed before with "You attempted an invalid move. Reason: …"
    # appended to its conversation, reward 0 and no error: it counted as accepted.
    env = env_class_for(served_fixture("told_off"))()
    env.reset(seed=1)
    assert "You submitted [crane]" in env.guess(message="crane")  # a rival's invalid move refuses nothing of ours
    assert env.episode.events[-1].error is None
    with pytest.raises(ToolFailed, match=r"refused: the environment answered: You attempted an invalid move\. "
                                         r"Reason: You have already guessed 'crane' before\."):  # fmt: skip
        env.guess(message="crane")
    assert "You submitted [plant]" in env.guess(message="plant")  # the earlier refusal is old text: not read again
    assert [e.error is None for e in env.episode.events] == [True, False, True]
    env._close()


def test_only_the_text_a_step_added_is_read_for_a_refusal():
    from envs.refusals import added_text, refused_in_words

    before = {"messages": [{"content": "[GAME] You attempted an invalid move. Reason: old.\n"}], "turn": 1}
    grown = {"messages": [{"content": before["messages"][0]["content"] + "[GAME] You submitted [plant].\n"}], "turn": 2}
    assert added_text(before, grown) == "[GAME] You submitted [plant].\n" and refused_in_words(before, grown) is None
    rewritten = {"messages": [{"content": "[GAME] You attempted an invalid move. Reason: again."}], "turn": 1}
    assert refused_in_words(before, rewritten) == "You attempted an invalid move. Reason: again."


def test_a_two_player_game_refuses_the_move_of_the_player_whose_turn_it_was():
    # OpenEnv's textarena shows the current player's messages and `current_player_id`; TextArena's two-player games
    # write the refusal to the player who moved ("Player 1 attempted an invalid move"), whose turn it stays.
    from envs.refusals import refused_in_words

    def seen(player: int, *texts: str) -> dict:
        return {"current_player_id": player, "messages": [{"sender_id": -1, "content": t} for t in texts]}

    refusal = "[GAME] Player 1 attempted an invalid move. Reason: column 3 is full. Please resubmit a valid move."
    assert refused_in_words(seen(1, "[GAME] Your turn."), seen(1, refusal)) == refusal.removeprefix("[GAME] ")
    assert refused_in_words(seen(0, "[GAME] Your turn."), seen(1, refusal)) is None  # player 0 moved: not its move
    assert refused_in_words({"messages": []}, {"messages": [{"content": refusal}]}) is None  # no turn shown: a rival's
