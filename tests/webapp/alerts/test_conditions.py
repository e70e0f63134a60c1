"""The conditions behind alert rules, on series of (step, value)."""

from __future__ import annotations

from webapp.alerts import conditions


def series(values, start=1):
    return [(start + i, float(v)) for i, v in enumerate(values)]


def test_a_reward_that_drops_to_nothing_is_a_collapse_and_a_noisy_one_is_not():
    # Paying well on every step, then nothing: five steps are beyond chance (at most (0+1)/(3+2) = 20 % were low).
    collapsed = conditions.reward_collapse(series([2.1, 2.4, 1.9, 0, 0, 0, 0, 0]))
    assert collapsed and collapsed.step == 8 and "before, 20% of steps were that low" in collapsed.message
    assert conditions.reward_collapse(series([2.1, 2.4, 1.9, 0, 0, 0, 0])) is None, "four could be chance"
    # The demo's tiny model on guess-number: four episodes a step, about one in five pays, so a step where nothing
    # paid is common, and five in a row happen (measured on a demo run); that is noise, not a collapse.
    demo = [0.17, 0.17, 0.2, 0, 0, 0.4, 0.38, 0, 0.32, 0.55, 0, 0.2, 0, 0.2, 1.0, 0, 0.38, 0, 0.43, 0.5, 0.2, 0.2,
            0, 0, 0.15, 0, 0.75, 0, 0, 0.15, 0, 0, 0, 0, 0]  # fmt: skip
    assert all(conditions.reward_collapse(series(demo[:n])) is None for n in range(1, len(demo) + 1))
    # The same rate, then nine steps in a row that paid nothing (a demo run whose tool calls broke): a collapse.
    broken = [0.17, 0.17, 0.2, 0, 0, 0.17, 0, 0, 0.15, 0.55, 0, 0.42, 0.45, 0, 0.25, 0, 0.25] + [0] * 9
    assert conditions.reward_collapse(series(broken)).step == len(broken)
    assert conditions.reward_collapse(series([0.0] * 10)) is None, "a run that never earned has not collapsed"


def test_user_rules_threshold_change_and_z_score():
    assert conditions.threshold(series([0.1, 0.5, 0.6]), above=True, value=0.4, steps=2).step == 3
    assert conditions.threshold(series([0.1, 0.5, 0.3]), above=True, value=0.4, steps=2) is None
    assert conditions.threshold(series([5, 1]), above=False, value=2).value == 1.0
    assert "-50%" in conditions.relative_change(series([1.0, 0.8, 0.5]), percent=40, steps=2).message
    assert conditions.relative_change(series([1.0, 0.8, 0.7]), percent=40, steps=2) is None
    steady = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95]
    assert conditions.zscore(series([*steady, 3.0]), z=3, window=6) is not None
    assert conditions.zscore(series([*steady, 1.1]), z=3, window=6) is None


def test_the_built_in_grpo_rules():
    assert conditions.no_learning_signal(series([1.0] * 10)) is not None
    assert conditions.no_learning_signal(series([1.0] * 9 + [0.0])) is not None, "90 % of the groups"
    assert conditions.no_learning_signal(series([1.0] * 8 + [0.0, 0.0])) is None
    assert conditions.tool_error_spike(series([0.0, 0.1, 0.0, 0.6, 0.7, 0.9])) is not None
    assert conditions.tool_error_spike(series([0.6, 0.7, 0.6, 0.6, 0.7, 0.9])) is None, "always failing is no spike"
    assert conditions.entropy_collapse_or_blowup(series([1.0, 1.0, 1.0, 0.5, 0.05, 0.04, 0.03])) is not None
    assert conditions.entropy_collapse_or_blowup(series([1.0, 1.0, 1.0, 0.9, 0.8, 0.85])) is None
    assert conditions.clip_ratio_high(series([0.1, 0.3, 0.3, 0.4])) is not None
    assert conditions.environment_error_spike(series([0, 0, 0, 2, 3, 4])) is not None


def test_a_model_that_stops_calling_its_tools_is_told_and_a_dip_of_one_step_is_not():
    # OpenEnv's maze at learning rate 5e-4, measured: 1.75 calls per episode, then none (every move costs 0.05).
    found = conditions.tool_calls_stopped(series([1.75, 0.0, 0.25]))
    assert found is not None and found.step == 3 and "stopped calling its tools" in found.message
    # guess-number at the demo's settings, 60 steps on this machine: calls dip to 1.0 for single steps, then recover.
    demo = [3.0, 4.5, 5.0, 3.25, 5.0, 2.25, 4.5, 5.0, 4.0, 1.75, 2.75, 4.25, 3.25, 3.75, 1.0, 5.0, 4.75, 4.25, 3.5,
            4.75, 3.25, 4.25, 3.75, 5.0, 3.75, 5.0, 2.0, 4.75, 4.25, 3.5, 3.25, 4.0, 3.5, 4.25, 4.25, 4.75, 4.0, 4.75,
            4.25, 3.25, 4.5, 4.25, 5.0, 2.25, 1.0, 3.75, 4.75, 4.5, 3.0, 3.75, 4.75, 4.0, 5.0, 4.25, 2.5, 5.0,
            5.0]  # fmt: skip
    assert [n for n in range(1, len(demo) + 1) if conditions.tool_calls_stopped(series(demo[:n]))] == []
    # `manage.py demo_run` itself (its held-out evals too): a dip to 1.0 at its second step, then 2.5.
    demo_run = [4.75, 1.0, 2.5, 4.5, 5.0, 3.5, 3.5, 4.75, 4.5, 4.75, 3.75, 3.5, 4.0, 4.0, 1.0, 3.25, 2.75, 4.0, 4.25,
                3.5, 3.0, 2.5, 3.5, 3.5, 2.75, 4.5, 1.0, 3.5, 1.75, 3.0, 3.75, 4.5, 3.5, 4.0, 3.5, 3.25, 2.75, 4.0,
                3.25, 2.5, 3.0, 3.25, 3.0, 1.25, 2.0, 4.0, 4.0, 2.5, 2.5, 2.25, 4.0, 2.0, 3.5, 3.25, 2.5, 3.75, 2.75,
                4.25, 2.75, 4.75]  # fmt: skip
    assert [n for n in range(1, 61) if conditions.tool_calls_stopped(series(demo_run[:n]))] == []
    assert conditions.tool_calls_stopped(series([0.25, 0.0, 0.0])) is None, "a run that hardly called: nothing stopped"
    assert conditions.tool_calls_stopped(series([2.0, 0.5, 1.0])) is None, "half of the start is no stop"
