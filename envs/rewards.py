"""Whose reward a run learns from, and how an episode's reward is read from what the environment sent.

Three kinds, one per environment version:

- `sum` (the default): every step's reward added up: environments that pay as they go (a guess that is close, a
  penalty for a refused move).
- `final`: the last step's reward only: games and plans whose intermediate rewards are shaping or noise, where the
  outcome is what counts. The whole completion gets it.
- `environment`: the environment owns the reward: its rubric (OpenEnv's `openenv.core.rubrics`, a
  `TrajectoryRubric` that scores the trajectory when it ends) sends its verdict in the final observation, in
  `reward` or in a field of its own (CARLA's `rubric_reward`). The adapter class then defines TRL's `get_reward()`,
  which TRL turns into a reward column of its own (`rewards/<EnvClass>/mean`).

Where the kind comes from, in order: the user's choice (a version setting), the environment's manifest
(`openenv.yaml`: `reward: {kind: environment, field: rubric_reward}`), the server's observation schema (a
`rubric_reward` field), else `sum`. The version keeps the kind and where it came from, so its page can say why.

A rubric's credit per step (OpenEnv's `compute_step_rewards()`, which chess sends as `metadata.discounted_rewards`)
is read from the final observation where the server sends it, and shown beside each call in the transcript.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

KINDS = ("sum", "final", "environment")
SOURCES = ("default", "declared", "detected", "chosen")
KIND_TITLES = {
    "sum": "the sum of step rewards",
    "final": "the final step's reward",
    "environment": "the environment's own reward (its rubric)",
}
# Observation fields that carry a rubric's verdict apart from the raw reward (OpenEnv's CARLA environment).
RUBRIC_FIELDS = ("rubric_reward",)
# Where a server sends a rubric's per-step credit in the final observation's metadata (OpenEnv's chess).
CREDIT_KEYS = ("step_rewards", "discounted_rewards", "rubric_step_rewards")
FIELD_NAME_LIMIT = 100


@dataclass(frozen=True)
class RewardRule:
    """A version's reward: its kind, the observation field an environment-owned reward is read from, and where
    the rule came from (default, declared in the manifest, detected from the server, chosen by a user)."""

    kind: str = "sum"
    field: str = "reward"
    source: str = "default"

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "field": self.field, "source": self.source}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RewardRule:
        data = data or {}
        return cls(kind=str(data.get("kind") or "sum"), field=str(data.get("field") or "reward"),
                   source=str(data.get("source") or "default"))  # fmt: skip

    @property
    def title(self) -> str:
        title = KIND_TITLES.get(self.kind, self.kind)
        return f"{title}, read from `{self.field}`" if self.kind == "environment" and self.field != "reward" else title

    @property
    def reason(self) -> str:
        """Why the version uses this rule, for its page."""
        return {
            "default": "nothing declared it otherwise: every step's reward counts",
            "declared": "declared in its openenv.yaml (reward:)",
            "detected": f"detected: its observations carry `{self.field}`, a rubric's verdict",
            "chosen": "chosen by a user for this version",
        }.get(self.source, self.source)


class RewardRuleError(ValueError):
    """A reward rule that cannot be used; the message names what is wrong."""


def reward_rule_check(raw: Any, *, observation_fields: set[str] | None = None, source: str = "chosen") -> RewardRule:
    """A reward rule from a setting or a manifest: `{"kind": ..., "field": ...}` or a bare kind."""
    if isinstance(raw, str):
        raw = {"kind": raw}
    if not isinstance(raw, dict):
        raise RewardRuleError("the reward is a kind (sum, final or environment), or {kind, field}")
    unknown = sorted(set(raw) - {"kind", "field", "source"})
    if unknown:
        raise RewardRuleError(f"unknown reward key {unknown[0]!r} (keys: kind, field)")
    kind = str(raw.get("kind") or "sum").strip().lower()
    if kind not in KINDS:
        raise RewardRuleError(f"{kind!r} is not a reward kind (kinds: {', '.join(KINDS)})")
    field = str(raw.get("field") or "reward").strip()
    if len(field) > FIELD_NAME_LIMIT or not field.replace("_", "").replace(".", "").isalnum():
        raise RewardRuleError(f"{field[:60]!r} is not an observation field name")
    if field != "reward" and kind != "environment":
        raise RewardRuleError("only an environment-owned reward is read from a field of its own")
    top_level = field.split(".", 1)[0] if field.startswith("metadata.") else field
    if observation_fields is not None and field != "reward" and top_level not in observation_fields | {"metadata"}:
        known = ", ".join(sorted(observation_fields))
        raise RewardRuleError(f"{field!r} is not an observation field (fields: {known})")
    return RewardRule(kind=kind, field=field, source=source)


def declared_rule(manifest: dict[str, Any] | None) -> RewardRule | None:
    """The rule an environment's `openenv.yaml` declares under `reward:`, if any (checked; a bad one raises)."""
    raw = (manifest or {}).get("reward")
    if raw is None:
        return None
    return reward_rule_check(raw, source="declared")


def detected_rule(observation_schema: dict[str, Any] | None) -> RewardRule | None:
    """An environment whose observations carry a rubric's verdict in a field of its own owns its reward."""
    properties = (observation_schema or {}).get("properties") or {}
    for name in RUBRIC_FIELDS:
        if name in properties:
            return RewardRule(kind="environment", field=name, source="detected")
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def field_value(observation: dict[str, Any] | None, reward: float | None, field: str) -> float | None:
    """The value of `field` in one observation: `reward` is the step's reward; `metadata.x` reads its metadata."""
    if field == "reward":
        return _number(reward)
    observation = observation or {}
    if field.startswith("metadata."):
        return _number((observation.get("metadata") or {}).get(field.removeprefix("metadata.")))
    return _number(observation.get(field))


def step_credits(observation: dict[str, Any] | None) -> list[float] | None:
    """A rubric's credit per step as the server sends it in the final observation's metadata, if it does."""
    metadata = (observation or {}).get("metadata") or {}
    for key in CREDIT_KEYS:
        values = metadata.get(key)
        if isinstance(values, list) and values and all(_number(v) is not None for v in values):
            return [float(v) for v in values]
    return None
