"""How a run's metrics are laid out as charts: one metric per panel, in the sections a GRPO user reads them by
(reward first, then the held-out evaluation, tools and environment, policy and loss, completions, throughput and
system), each with a readable title and a unit that says how to format its axis.

The run page and the compare page both draw what `panel_layout` returns, so a metric sits in the same place on
both; a user's pins, hidden panels and order (`ChartLayout`) are applied on top of it in the browser.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    first: tuple[str, ...]  # the panels a GRPO user looks at first, in this order; the rest follow by name


SECTIONS: tuple[Section, ...] = (
    Section("reward", "Reward", ("reward", "frac_reward_zero_std")),
    Section("eval", "Held-out evaluation", ("eval/mean_reward", "eval/success_rate", "eval/pass@1")),
    Section("tools", "Tools and environment", ("tools/call_frequency", "tools/failure_frequency",
                                               "env/tool_calls_per_episode", "env/tool_calls", "env/tool_errors",
                                               "env/calls_not_run")),
    Section("policy", "Policy and loss", ("loss", "kl", "entropy", "clip_ratio/region_mean", "clip_ratio/low_mean",
                                          "clip_ratio/high_mean", "grad_norm", "learning_rate")),
    Section("completions", "Completions", ("completions/mean_length", "completions/clipped_ratio",
                                           "completions/max_length", "completions/min_length")),
    Section("system", "Throughput and system", ("step_time", "num_tokens")),
    Section("other", "Other", ()),
    # TRL's own evaluation loop logs its training metrics again under eval_ (eval/loss, eval/clip_ratio/…): kept,
    # last, and collapsed until opened (ChartLayout.collapsed).
    Section("trl_eval", "Evaluation loop (TRL's own logs)", ("eval/reward", "eval/loss")),
)  # fmt: skip
COLLAPSED_AT_FIRST = ("trl_eval",)
# What Trainyard's held-out evaluations record (workers/training/evaluation_recording.py), per environment too.
HELDOUT_LEAVES = {"mean_reward", "success_rate", "tool_error_rate", "turns_per_episode", "tokens_per_episode",
                  "tool_calls_per_episode"}  # fmt: skip
SECTION_KEYS = tuple(s.key for s in SECTIONS)

# Words that name a ratio (0…1, shown as a percentage). "learning_rate" is not one, nor TRL's tool call_frequency
# (calls per completion).
_RATIO = re.compile(r"(ratio|failure_frequency|frac_|_frac|share|success_rate|error_rate|pass@|_rate$)")
_NOT_RATIO = ("learning_rate",)
_SYSTEM = re.compile(
    r"(^num_tokens$|^epoch$|^step_time$|runtime|per_second|flos|memory|^timing/|^system/|^train_|seconds)"
)

TITLES = {
    "reward": "Reward (mean ± std of a step's episodes)",
    "reward_std": "Reward standard deviation",
    "frac_reward_zero_std": "Groups with zero reward spread (no learning signal)",
    "loss": "Loss",
    "kl": "KL divergence to the reference",
    "entropy": "Entropy of the policy",
    "grad_norm": "Gradient norm",
    "learning_rate": "Learning rate",
    "num_tokens": "Tokens seen",
    "step_time": "Seconds per step",
    "epoch": "Epoch",
    "tools/call_frequency": "Tool calls per completion",
    "tools/failure_frequency": "Tool call failures (share)",
    "env/tool_calls": "Tool calls that reached the environment",
    "env/tool_errors": "Tool calls the environment refused",
    "env/tool_calls_per_episode": "Environment calls per episode",
    "env/calls_not_run": "Calls not run: the episode's token or turn budget was spent",
}
WORDS = {"kl": "KL", "pass@1": "pass@1", "std": "std", "frac": "share", "num": "number of", "eval": "eval"}


def is_ratio(name: str) -> bool:
    leaf = name.rsplit("/", 1)[-1]
    return leaf not in _NOT_RATIO and bool(_RATIO.search(name))


def metric_label(name: str) -> str:
    """A title a person reads: `completions/mean_length` → "Completions: mean length"; known names get their own."""
    if name in TITLES:
        return TITLES[name]
    parts = [p for p in name.split("/") if p]
    words = [" ".join(WORDS.get(w, w) for w in part.split("_")) for part in parts]
    if not words:
        return name
    head = words[0][:1].upper() + words[0][1:]
    return head if len(words) == 1 else f"{head}: {' · '.join(words[1:])}"


def section_of(name: str) -> str:
    leaf = name.rsplit("/", 1)[-1]
    if name.startswith("eval/"):
        base = leaf.removesuffix("_low").removesuffix("_high")
        return "eval" if base in HELDOUT_LEAVES or base.startswith("pass@") else "trl_eval"
    if name in ("reward", "reward_std", "frac_reward_zero_std") or name.startswith(("reward/", "rewards/")):
        return "reward"
    if name.startswith(("tools/", "env/")):
        return "tools"
    if name.startswith(("clip_ratio/", "policy/")) or leaf in ("loss", "kl", "entropy", "grad_norm", "learning_rate"):
        return "policy"
    if name.startswith("completions/"):
        return "completions"
    if _SYSTEM.search(name):
        return "system"
    return "other"


def _order_key(section: Section, name: str) -> tuple[int, str]:
    return (section.first.index(name), "") if name in section.first else (len(section.first), name)


def panel_layout(names: Iterable[str]) -> list[dict[str, Any]]:
    """Sections, most useful first, each with one panel per metric. A metric's interval (`reward_std`, an eval's
    `_low` and `_high`) is drawn as a band in its metric's panel rather than as a panel of its own."""
    present = set(names)
    companions: dict[str, dict[str, Any]] = {}
    if "reward" in present and "reward_std" in present:
        companions["reward"] = {"kind": "std", "names": ["reward_std"]}
    for name in present:
        if name.startswith("eval/") and f"{name}_low" in present and f"{name}_high" in present:
            companions[name] = {"kind": "interval", "names": [f"{name}_low", f"{name}_high"]}
    consumed = {c for entry in companions.values() for c in entry["names"]}
    by_section: dict[str, list[str]] = {key: [] for key in SECTION_KEYS}
    for name in present - consumed:
        by_section[section_of(name)].append(name)
    layout = []
    for section in SECTIONS:
        members = sorted(by_section[section.key], key=lambda n: _order_key(section, n))
        if not members:
            continue
        panels = []
        for name in members:
            panel = {"key": name, "title": metric_label(name), "names": [name], "unit": "ratio" if is_ratio(name)
                     else "", "band": companions.get(name)}  # fmt: skip
            # A held-out evaluation's interval: its panel draws the baseline and links each point to its eval.
            panel["heldout"] = bool(panel["band"] and panel["band"]["kind"] == "interval")
            panels.append(panel)
        layout.append({"key": section.key, "title": section.title, "panels": panels})
    return layout
