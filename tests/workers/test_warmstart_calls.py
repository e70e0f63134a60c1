"""A warm start's synthetic episodes keep only calls the environment accepted, and it sends the ones an
observation offers: on an environment whose valid moves are a few strings that change with the position (like
OpenEnv's chess), schema-valid random words are all refused; the offered moves are accepted. An enum the schema calls
a string is played with the words its description names."""

from __future__ import annotations

import json

import httpx
import pytest

from envs.actions import described_values, named_values, offered_arguments, spelled_words
from envs.adapter import tool_env_class
from envs.providers.process import ProcessProvider
from envs.tools import tools_from_action_schema
from tests.envs.conftest import fixture_source
from workers.models import warmstart
from workers.models.tiny import synthetic_conversations, train_tokenizer
from workers.models.warmstart import (
    CallTally,
    WarmStartError,
    fitting_conversations,
    play_episodes,
    tokens_for_words,
)


@pytest.fixture(scope="module")
def served_class(tmp_path_factory):
    """served_class(fixture) → the adapter class over one server of it, for the module."""
    provider = ProcessProvider(log_dir=tmp_path_factory.mktemp("env-logs"))
    deployments = []

    def serve(name: str):
        deployments.append(provider.provision(fixture_source(name)))
        endpoints = deployments[-1].endpoints
        schema = httpx.get(endpoints[0] + "/schema").json()["action"]
        return tool_env_class(name=name, tools=tools_from_action_schema(schema), endpoints=endpoints)

    yield serve
    for deployment in deployments:
        provider.teardown(deployment)


@pytest.fixture(scope="module")
def legal_moves(served_class):
    return served_class("legal_moves")


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
    # The moves were copied from what the episode showed: they get tokens of their own (one choice to copy, not a
    # letter and a digit to spell); a random word no observation showed is no copied value.
    assert set(tally.copied) <= {f"{letter}{step}" for letter in "abcdefgh" for step in (1, 2, 3)}
    assert sum(tally.copied.values()) == tally.accepted


def test_a_value_is_copied_when_an_observation_showed_it():
    tally = CallTally()
    tally.record("move", {"move": "c2", "note": "apple"}, None, shown='[{"legal_moves": ["c1", "c2", "c3"]}]')
    tally.record("move", {"move": "d2"}, "refused: the environment answered with a penalty (-0.1)", shown='["d2"]')
    assert tally.copied == {"c2": 1}  # "apple" was not shown; a refused call teaches nothing


def test_a_warm_start_that_the_environment_refuses_says_which_tool_and_arguments(legal_moves, monkeypatch):
    # Without the offered moves, schema-valid words are what chess was sent ("river", "stone"): each is answered
    # with a penalty and the same board, which is a refusal; the warm start refuses to make a model of that.
    monkeypatch.setattr(warmstart, "offered_arguments", lambda tool, observation, rng, **_: None)
    tally = CallTally()
    with pytest.raises(WarmStartError) as refused:
        play(legal_moves, tally)
    message = str(refused.value)
    assert f"the environment accepted {tally.accepted} of {tally.sent} calls" in message
    assert "move was refused" in message and "refused: the environment answered with a penalty (-0.1)" in message


def test_an_enum_sent_as_text_whose_legal_words_change_with_the_state_is_played_with_the_listed_ones(served_class):
    # OpenEnv's grid_world refused 16 of 18 warm-start calls: its action is an enum the schema calls a string. Here a
    # step into the wall is refused too (a penalty, nothing changed), and each observation lists the legal words.
    tally = CallTally()
    conversations = play(served_class("text_enum"), tally)
    assert tally.sent >= 24 and tally.share >= 0.9, (tally.sent, tally.accepted, tally.refused)
    sent = [warmstart.json.loads(m["tool_calls"][0]["function"]["arguments"])["direction"]
            for c in conversations for m in c["messages"] if m.get("tool_calls")]  # fmt: skip
    assert set(sent) <= {"up", "down", "left", "right"} and len(set(sent)) >= 3
    # Its habit: the word it chose before where legal ("down" from the first square, then "right" along the wall).
    top = max(set(sent), key=sent.count)
    assert top in {"down", "right"} and sent.count(top) >= len(sent) / 3, sent


def test_an_enum_sent_as_text_is_played_with_the_words_its_description_names():
    import random

    from envs.tools import ToolSpec

    walk = ToolSpec(
        name="walk",
        description="",
        parameters={
            "type": "object",
            "required": ["direction"],
            "properties": {
                "direction": {"type": "string", "description": "Which way to step: one of up, down, left or right."}
            },
        },
    )
    rng = random.Random(0)
    sent = {offered_arguments(walk, {"row": 0, "column": 2}, rng)["direction"] for _ in range(40)}
    assert sent == {"up", "down", "left", "right"}


def test_a_teacher_keeps_to_its_habit_and_a_new_choice_is_the_one_offered_most_often():
    # Chosen at random among the offered moves, a teacher's choice is one only a model that copies from the
    # observation can learn; by habit, the same choice from the same offer: a policy learnt by heart.
    import random

    from envs.actions import Habit

    habit = Habit(explore=0.0)
    for legal in (["b1c3", "e2e4", "g1f3"], ["e2e4", "g1f3"], ["a2a3", "e2e4"]):
        habit.see({"legal_moves": legal, "fen": "…"})
    rng = random.Random(0)
    assert habit.choose(["a2a3", "g1f3", "e2e4"], rng) == "e2e4"  # offered three times: legal in the most states
    assert habit.choose(["b1c3", "g1f3"], rng) == "g1f3"  # twice, against once
    for _ in range(5):
        habit.see({"legal_moves": ["a2a3", "h2h4"]})
    assert habit.choose(["a2a3", "e2e4"], rng) == "e2e4"  # chosen before: kept, though a2a3 is offered more now
    assert habit.choose(["h2h4", "a2a3", "c2c4"], rng) == "a2a3"  # a new choice: the most offered (a tie: first seen)
    assert habit.choose(["c2c4", "c2c3"], rng) == "c2c4"  # never offered: the pool's own order
    habit.refused(["e2e4"])  # refused here: another choice in this state, and no longer a habit
    assert habit.choose(["a2a3", "e2e4"], rng) == "a2a3"
    habit.see({"legal_moves": ["e2e4", "a2a3"]})
    assert habit.chosen["e2e4"] < habit.chosen["a2a3"] and habit.choose(["e2e4", "a2a3"], rng) == "a2a3"
    exploring = Habit(explore=1.0)
    exploring.see({"legal_moves": ["e2e4", "d2d4"]})
    assert {exploring.choose(["e2e4", "d2d4"], rng) for _ in range(30)} == {"e2e4", "d2d4"}
    assert exploring.chosen == {}  # a random choice is not kept as habit


def test_a_models_call_is_read_from_what_it_generated():
    from workers.models.warmstart import _call_values

    said = (
        '<think>\n\n</think>\n\n<tool_call>\n{"name": "chess", "arguments": {"move": "b1c3"}}\n</tool_call><|im_end|>'
    )
    assert _call_values(said) == ["b1c3"]
    walk = '<tool_call>\n{"name": "walk", "arguments": {"direction": "down", "steps": 2}}\n</tool_call>'
    assert _call_values(walk) == ["down", 2]
    assert _call_values("Done.") == _call_values('<tool_call>{"name": "chess", "argu</tool_call>') == []


@pytest.mark.parametrize(
    ("description", "values"),
    [
        ("Which way to step: one of up, down, left or right.", ["up", "down", "left", "right"]),
        ("Your throw: 'rock', 'paper' or 'scissors'.", ["rock", "paper", "scissors"]),
        ("A heading, north/south/east/west", ["north", "south", "east", "west"]),
        ("A move in UCI notation, e.g. e2e4", []),
        ("The message to echo back, and/or a note.", []),
    ],
)
def test_the_values_a_description_names_are_read(description, values):
    assert described_values({"type": "string", "description": description}) == values


def test_an_identifier_is_one_an_earlier_answer_named_even_inside_a_tools_json_text():
    # OpenEnv's calendar refused 605 of 864 list_events calls ("Calendar with id 'crane' does not exist"): its
    # calendarId must be one of the ids that get_calendar_list answered, in an MCP result's JSON text; then it
    # refused most of the rest for a made-up optional argument ("iCalUID": "amber"): after two refusals a warm start
    # sends the required arguments alone (… and never in a minimal call).
    import random

    from envs.tools import ToolSpec

    calendars = [{"id": "primary", "summary": "Alice"}, {"id": "team@example.com", "summary": "Team"}]
    listing = json.dumps({"kind": "calendarList", "items": calendars})
    observation = {"result": listing, "reward": None, "done": False, "metadata": {}}
    events = ToolSpec(name="list_events", description="", parameters={"type": "object", "required": ["calendarId"],
                      "properties": {"calendarId": {"type": "string"}, "q": {"type": "string"}}})  # fmt: skip
    rng = random.Random(3)
    sent = [offered_arguments(events, observation, rng) for _ in range(20)]
    assert {a["calendarId"] for a in sent} == {"primary", "team@example.com"}
    assert not {a.get("q") for a in sent} & {"primary", "team@example.com"}  # not an identifier: no named value
    assert "q" in {k for a in sent for k in a}  # an optional argument, made up half the time …
    assert all(set(offered_arguments(events, observation, rng, minimal=True)) == {"calendarId"} for _ in range(10))
    step = ToolSpec(name="step", description="", parameters={"type": "object", "required": ["direction"],
                    "properties": {"direction": {"type": "string"}}})  # fmt: skip
    assert offered_arguments(step, {"direction": "up", "message": "moved"}, rng) is None  # an echo is no choice
    assert named_values({"result": "{not json"}) == {"result": ["{not json"]}


def test_a_name_argument_takes_the_value_the_observation_names_by_its_stem():
    # OpenEnv's finqa asks about one company (`metadata.company`) and its tools take `company_name`: a warm start sent
    # tool names from the observation's `available_tools` list instead, and all 640 calls were refused ("Error:
    # 'get_table_info' not found. Available companies: ['acme', 'globex']").
    import random

    from envs.tools import ToolSpec

    tools = ["get_descriptions", "get_table_info", "submit_answer"]
    observation = {"metadata": {"question": "What was acme's revenue in 2023?", "company": "acme",
                                "available_tools": tools}}  # fmt: skip
    describe = ToolSpec(name="get_descriptions", description="", parameters={"type": "object", "required":
                        ["company_name"], "properties": {"company_name": {"type": "string"}}})  # fmt: skip
    rng = random.Random(5)
    assert {offered_arguments(describe, observation, rng)["company_name"] for _ in range(10)} == {"acme"}
    camel = ToolSpec(name="describe", description="", parameters={"type": "object", "required": ["companyName"],
                     "properties": {"companyName": {"type": "string"}}})  # fmt: skip
    assert offered_arguments(camel, observation, rng) == {"companyName": "acme"}
    # Its next call names the company again (named at reset, not in the answer before) and a table the answer listed
    # (a JSON list as the tool's text): "Error: 'ghost' not found" 640 times, before.
    info = ToolSpec(name="get_table_info", description="", parameters={"type": "object", "required":
                    ["company_name", "table_name"], "properties": {"company_name": {"type": "string"},
                                                                   "table_name": {"type": "string"}}})  # fmt: skip
    answered = {"result": '["revenue", "costs"]', "done": False, "reward": 0.0, "metadata": {}}
    sent = [offered_arguments(info, answered, rng, earlier=[observation]) for _ in range(10)]
    assert {a["company_name"] for a in sent} == {"acme"} and {a["table_name"] for a in sent} == {"revenue", "costs"}


def test_a_warm_start_whose_tools_outgrow_what_it_trains_on_refuses_saying_so():
    # OpenEnv's calendar: 37 tools whose descriptions and schemas took 54,929 of the tiny tokenizer's tokens, before
    # any call. SFT cut every conversation there and the warm start died with `num_samples=0`.
    tokenizer = train_tokenizer(synthetic_conversations(8, seed=1))
    tool = {"type": "function", "function": {"name": "list_events", "description": "List a calendar's events. " * 40,
            "parameters": {"type": "object", "properties": {"calendarId": {"type": "string"}}}}}  # fmt: skip
    call = {"type": "function", "function": {"name": "list_events", "arguments": '{"calendarId": "primary"}'}}
    messages = [{"role": "user", "content": "Find the meeting."}, {"role": "assistant", "content": "",
                "tool_calls": [call]}, {"role": "tool", "name": "list_events", "content": "[]"},
                {"role": "assistant", "content": "Done."}]  # fmt: skip
    crowded = {"messages": messages, "tools": json.dumps([tool] * 6)}
    with pytest.raises(WarmStartError, match=r"0 of 5 played episodes fit the 1,024 tokens .* the 6 tools'"):
        fitting_conversations(tokenizer, [crowded] * 5, max_length=1024)
    roomy = {"messages": messages, "tools": json.dumps([tool])}
    assert fitting_conversations(tokenizer, [roomy] * 4 + [crowded], max_length=1024) == [roomy] * 4


def test_an_episode_too_long_whole_is_cut_after_its_last_call_that_fits():
    # OpenEnv's chess answers each move with its board and twenty legal moves: no whole episode of its warm start fit
    # 1,024 tokens, and it was refused although its first calls fit.
    tokenizer = train_tokenizer(synthetic_conversations(8, seed=1))
    tool = {"type": "function", "function": {"name": "move", "description": "Play a move.",
            "parameters": {"type": "object", "properties": {"move": {"type": "string"}}}}}  # fmt: skip
    moves = [f"{a}{b}{c}{d}" for a in "abcdefgh" for b in "1357" for c in "abcd" for d in "48"]  # 256 of them
    board = "legal moves: " + ", ".join(moves)

    def call(move: str) -> dict:
        return {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "move", "arguments": json.dumps({"move": move})}}]}  # fmt: skip

    messages = [{"role": "user", "content": "Win."}, call("e2e4"), {"role": "tool", "name": "move", "content": board},
                call("d2d4"), {"role": "tool", "name": "move", "content": "ok"},
                {"role": "assistant", "content": "Done."}]  # fmt: skip
    kept = fitting_conversations(tokenizer, [{"messages": messages, "tools": json.dumps([tool])}] * 4, max_length=1024)
    assert [m["role"] for m in kept[0]["messages"]] == ["user", "assistant"]  # cut after e2e4, before the board
    assert len(kept) == 4

    long_task = [{"role": "user", "content": board}, call("e2e4"), {"role": "assistant", "content": "Done."}]
    with pytest.raises(WarmStartError, match=r"even cut after their first call.*show the model fewer of its fields"):
        fitting_conversations(tokenizer, [{"messages": long_task, "tools": json.dumps([tool])}] * 4, max_length=1024)


def test_the_words_a_call_must_spell_become_tokens_of_their_own():
    # OpenEnv's grid_world: its action is an enum of UP, DOWN, LEFT, RIGHT, which the tiny tokenizer (trained on the
    # built-in games' lowercase words) cut in pieces; the model garbled them ("DP", "RIGE") and 12 of 13 calls of a
    # 3-step run were refused.
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from envs.tools import ToolSpec

    move = ToolSpec(name="grid_move", description="", parameters={"type": "object", "required": ["action"],
                    "properties": {"action": {"type": "string", "enum": ["UP", "DOWN", "LEFT", "RIGHT"]},
                                   "note": {"type": "string", "description": "'fast' or 'careful'"}}})  # fmt: skip
    words = spelled_words([move])
    assert words == ["grid_move", "action", "UP", "DOWN", "LEFT", "RIGHT", "note", "fast", "careful"]

    tokenizer = train_tokenizer(synthetic_conversations(8, seed=1))
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                             tie_word_embeddings=True))  # fmt: skip
    pieces = tokenizer("RIGHT", add_special_tokens=False)["input_ids"]
    assert len(pieces) > 1
    before = model.get_input_embeddings().weight[pieces].mean(dim=0).detach().clone()

    added = tokens_for_words(model, tokenizer, words)
    assert "RIGHT" in added and "UP" in added
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer)
    assert model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    call = tokenizer('{"action": "RIGHT"}', add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_tokens_to_ids("RIGHT") in call
    assert torch.allclose(model.get_input_embeddings().weight[tokenizer.convert_tokens_to_ids("RIGHT")], before)
    assert tokenizer.decode(call) == '{"action": "RIGHT"}'
    # A whole word only: the UP of UPDATE stays in pieces. A word the tokenizer already has is not added twice.
    assert tokenizer.convert_tokens_to_ids("UP") not in tokenizer("UPDATE", add_special_tokens=False)["input_ids"]
    assert tokens_for_words(model, tokenizer, words) == []


def test_an_observation_that_names_its_choices_offers_only_those():
    # OpenEnv's maze shows its layout (rows of 0s and 1s) and its positions beside `legal_actions`: offered every
    # whole number it showed, a warm start sent moves into walls (20 % of its calls accepted).
    import random

    from envs.actions import offered_values
    from envs.tools import ToolSpec

    maze = {"metadata": {"maze": [[0, 1, 0], [0, 0, 1]], "step": 4}, "legal_actions": [3, 1],
            "current_position": [0, 2], "previous_position": [0, 1]}  # fmt: skip
    assert offered_values(maze) == [3, 1]
    move = ToolSpec(name="maze", description="", parameters={"type": "object", "required": ["action"],
                    "properties": {"action": {"type": "integer"}}})  # fmt: skip
    rng = random.Random(0)
    assert {offered_arguments(move, maze, rng)["action"] for _ in range(20)} == {1, 3}
    # With no list named as choices, every list of short values is an offer, as before.
    assert offered_values({"board": [[0, 2], [5]], "free": ["a1"]}) == [0, 2, 5, "a1"]
