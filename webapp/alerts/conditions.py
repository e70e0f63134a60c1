"""When a metric series is in trouble: the conditions behind alert rules, as plain functions of a series.

A series is a list of (step, value), oldest first. Each condition returns a `Finding` (the step, the value and a
sentence a person reads) or None. The built-in rules are what a GRPO user wants watched on every run; a team's own
rules are a threshold, a relative change over N steps, or a z-score against the recent band.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

Series = list[tuple[int, float]]


@dataclass(frozen=True)
class Finding:
    step: int
    value: float
    message: str


def threshold(series: Series, *, above: bool, value: float, steps: int = 1) -> Finding | None:
    """The last `steps` points are all above (or all below) `value`."""
    tail = series[-steps:]
    if len(tail) < steps or not tail:
        return None
    if all((v > value) if above else (v < value) for _, v in tail):
        step, last = tail[-1]
        where = "above" if above else "below"
        span = f" for {steps} steps" if steps > 1 else ""
        return Finding(step, last, f"{last:.4g} is {where} {value:g}{span}")
    return None


def relative_change(series: Series, *, percent: float, steps: int) -> Finding | None:
    """The last point differs from the one `steps` points earlier by more than `percent` % of it."""
    if len(series) <= steps:
        return None
    (_, before), (step, last) = series[-steps - 1], series[-1]
    if before == 0:
        return None
    change = (last - before) / abs(before) * 100
    if abs(change) > percent:
        return Finding(step, last, f"changed {change:+.0f}% over {steps} steps ({before:.4g} → {last:.4g})")
    return None


def zscore(series: Series, *, z: float, window: int) -> Finding | None:
    """The last point lies more than `z` standard deviations from the mean of the `window` points before it."""
    if len(series) < window + 1 or window < 2:
        return None
    band = [v for _, v in series[-window - 1 : -1]]
    mean, std = statistics.fmean(band), statistics.pstdev(band)
    step, last = series[-1]
    if std < 1e-12:
        return None
    score = (last - mean) / std
    if abs(score) > z:
        return Finding(step, last, f"{last:.4g} is {score:+.1f} standard deviations from its last {window} steps "
                                   f"({mean:.4g} ± {std:.2g})")  # fmt: skip
    return None


# -- the built-in GRPO rules --------------------------------------------------------------------------------------
CHANCE = 1e-3  # a run of bad steps this unlikely at the run's own rate of bad steps is not noise


def _rolling_best(values: list[float], width: int = 4) -> float:
    return max(statistics.fmean(values[max(0, i - width + 1) : i + 1]) for i in range(len(values)))


def reward_collapse(series: Series) -> Finding | None:
    """The reward stayed at a tenth of its best 4-step mean or below (the best at least 0.1) for a run of steps too
    long to be chance at this run's own rate of such steps before (a small batch often has a step where nothing
    paid; ten in a row after paying well is a collapse)."""
    values = [v for _, v in series]
    if len(values) < 4:
        return None
    best = _rolling_best(values)
    if best < 0.1:
        return None
    low = [v <= 0.1 * best for v in values]
    length = next((i for i, flag in enumerate(reversed(low)) if not flag), len(low))
    before = low[: len(low) - length][-20:]
    if length < 3 or not before:
        return None
    rate = (sum(before) + 1) / (len(before) + 2)  # how often a step was that low before the run (never 0 or 1)
    if rate**length < CHANCE:
        now = statistics.fmean(values[-length:])
        why = f"a collapse: before, {rate:.0%} of steps were that low"
        message = f"the mean reward stayed at {now:.3g} for {length} steps, down from a best of {best:.3g} ({why})"
        return Finding(series[-1][0], now, message)
    return None


def no_learning_signal(series: Series) -> Finding | None:
    """At least 90% of the GRPO groups had zero reward spread (all advantages 0) over the last 10 steps."""
    tail = series[-10:]
    if len(tail) < 10:
        return None
    share = statistics.fmean(v for _, v in tail)
    if share >= 0.9:
        message = f"{share:.0%} of GRPO groups had one reward for all completions over 10 steps: advantages are 0"
        return Finding(tail[-1][0], share, message)
    return None


def tool_error_spike(series: Series) -> Finding | None:
    """Half or more of the tool calls failed for 3 steps, where fewer than a fifth had failed before."""
    if len(series) < 6:
        return None
    before = statistics.median(v for _, v in series[:-3])
    found = threshold(series, above=True, value=0.5, steps=3)
    if found and before < 0.2:
        return Finding(found.step, found.value, f"{found.value:.0%} of tool calls failed (for 3 steps; "
                                                f"{before:.0%} before)")  # fmt: skip
    return None


def environment_error_spike(series: Series) -> Finding | None:
    """The environment refused tool calls on 3 steps in a row, where it had refused none in most steps before."""
    if len(series) < 6:
        return None
    before = statistics.median(v for _, v in series[:-3])
    if before == 0 and all(v > 0 for _, v in series[-3:]) and sum(v for _, v in series[-3:]) >= 6:
        step, last = series[-1]
        return Finding(step, last, f"the environment refused {int(last)} calls this step, and some on each of the "
                                   "last 3 steps (none in most steps before)")  # fmt: skip
    return None


def entropy_collapse_or_blowup(series: Series) -> Finding | None:
    """Entropy fell below a tenth of where it started, or rose past three times it (over 3 steps each time)."""
    if len(series) < 6:
        return None
    start = statistics.fmean(v for _, v in series[:3])
    now = statistics.fmean(v for _, v in series[-3:])
    if start > 0.05 and now < 0.1 * start:
        return Finding(series[-1][0], now, f"entropy collapsed: {now:.3g}, from {start:.3g} at the start")
    if start > 0 and now > 3 * start and now > 1.0:
        return Finding(series[-1][0], now, f"entropy blew up: {now:.3g}, from {start:.3g} at the start")
    return None


def clip_ratio_high(series: Series) -> Finding | None:
    """More than 20% of tokens were clipped for 3 steps: the policy moves too far per step."""
    found = threshold(series, above=True, value=0.2, steps=3)
    if found:
        message = f"{found.value:.0%} of tokens were clipped (for 3 steps): the policy moves too far each step"
        return Finding(found.step, found.value, message)
    return None


def tool_calls_stopped(series: Series) -> Finding | None:
    """The model stopped calling its tools: the environment calls per episode fell to a quarter of where the run
    started (at least 0.5 then) or less, for 2 steps in a row. GRPO teaches it when episodes without a call score
    more than episodes with one: OpenEnv's maze charges 0.05 for every move and pays only at an exit beyond the
    run's turns, and at learning rate 5e-4 one step of a warm-started tiny model took it from 1.75 calls per
    episode to none. Such a run still "succeeds", and its reward rises, while it learns nothing of the environment."""
    if len(series) < 3:
        return None
    values = [v for _, v in series]
    start = statistics.fmean(values[: min(3, len(values) - 2)])
    if start < 0.5 or not all(v <= 0.25 * start for v in values[-2:]):
        return None
    step, last = series[-1]
    return Finding(step, last, f"the model stopped calling its tools: {last:.2g} environment calls per episode, "
                               f"from {start:.2g} at the start. GRPO learns that when episodes without a call score "
                               "more than episodes with one: an environment that charges for every step, or a "
                               "learning rate that moves the policy too far in a step")  # fmt: skip


@dataclass(frozen=True)
class BuiltinRule:
    key: str
    title: str
    metric: str
    check: Callable[[Series], Finding | None]

    @property
    def description(self) -> str:
        return (self.check.__doc__ or "").strip()


BUILTIN_RULES: tuple[BuiltinRule, ...] = (
    BuiltinRule("reward_collapse", "Reward collapse", "reward", reward_collapse),
    BuiltinRule("no_learning_signal", "No learning signal", "frac_reward_zero_std", no_learning_signal),
    BuiltinRule("tool_error_spike", "Tool-error spike", "tools/failure_frequency", tool_error_spike),
    BuiltinRule("environment_error_spike", "Environment-error spike", "env/tool_errors", environment_error_spike),
    BuiltinRule("entropy", "Entropy collapse or blow-up", "entropy", entropy_collapse_or_blowup),
    BuiltinRule("clip_ratio_high", "Clip ratio too high", "clip_ratio/region_mean", clip_ratio_high),
    BuiltinRule("tool_calls_stopped", "Tool calls stopped", "env/tool_calls_per_episode", tool_calls_stopped),
)
STALLED_RULE_KEY = "stalled"  # judged by beat from the clock, not from a series (webapp/alerts/checks.py)
