"""Evidence a person can act on: where two long texts part, and which numbers are no state at all."""

from __future__ import annotations

import json
import random

from envs.trust.evidence import first_difference
from envs.trust.probes import spread_sample
from envs.volatile import lifetime_fields, steady


def test_two_long_texts_are_shown_where_they_part_not_by_their_common_beginning():
    # reasoning_gym's evidence printed two identical-looking prefixes ending in "…".
    question = "Solve the following puzzle carefully. " * 8
    before = json.dumps({"observation": {"text": question + "Answer: 42. Next question follows."}})
    after = json.dumps({"observation": {"text": question + "Answer: 17. Next question follows."}})
    shown = first_difference(before, after)
    assert shown.startswith(f"observation.text: texts differ from character {len(question) + 8} ")
    assert "Answer: 42" in shown and "Answer: 17" in shown


def test_short_values_are_shown_whole():
    shown = first_difference(json.dumps({"hint": "warmer"}), json.dumps({"hint": "colder"}))
    assert shown == 'hint: "warmer" vs "colder"'


def test_timings_and_lifetime_counters_are_no_state_but_a_step_counter_is():
    dropped: set[str] = set()
    metadata = {"execution_time": 0.31, "frame_number": 812, "episode_frame_number": 12, "stdout": "4"}
    kept = steady({"step_count": 3, "metadata": metadata}, dropped=dropped)
    assert kept == {"step_count": 3, "metadata": {"episode_frame_number": 12, "stdout": "4"}}
    assert dropped == {"execution_time", "frame_number"}
    # Only when the environment documents it: a counter without an episode twin or a description is compared.
    assert steady({"frame_number": 812}) == {"frame_number": 812}
    described = {"properties": {"frame_number": {"description": "Total frame number since environment creation."}}}
    assert steady({"frame_number": 812}, lifetime_fields(described)) == {}


def test_a_session_name_is_no_state_but_a_state_field_of_the_same_name_kind_is():
    # RFC 003's HTTP template echoes each session's tenant as `database_id`; an episode id names an episode.
    dropped: set[str] = set()
    shown = {"metadata": {"database_id": "trainyard-1f3a", "episode_id": "e-9", "moves": 3}, "board": "x.o"}
    assert steady(shown, dropped=dropped) == {"metadata": {"moves": 3}, "board": "x.o"}
    assert dropped == {"database_id", "episode_id"}
    assert steady({"database_id": 7}) == {"database_id": 7}, "a number under that name may be state: compared"


def test_a_large_set_of_attacks_is_sampled_across_every_tool_within_the_budget():
    # OpenEnv's calendar: 37 tools offered ~1,400 attacks; each costs a session and a reset.
    items = [(f"tool{t}.field{f} claims success", t, f) for t in range(37) for f in range(10)]
    sample = spread_sample(items, 48, random.Random(1))
    assert len(sample) == 48
    assert {tool for _, tool, _ in sample} == set(range(37)), "every tool is tried before any is tried twice"
    assert sample == sorted(sample, key=items.index), "in their original order"
    few = items[:5]
    assert spread_sample(few, 48, random.Random(1)) == few
