"""GRPO settings of a run: defaults, help text and validation in one place (forms, services and the CLI use it)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from django.core.exceptions import ValidationError


@dataclass(frozen=True)
class GRPOSettings:
    learning_rate: float = 5e-4
    num_generations: int = 4
    per_device_train_batch_size: int = 4
    gradient_accumulation_steps: int = 1
    max_completion_length: int = 384
    max_tool_calling_iterations: int = 6
    max_steps: int = 20
    beta: float = 0.0
    temperature: float = 1.0
    seed: int = 42
    save_steps: int = 10
    step_timeout: float = 30.0

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> GRPOSettings:
        data = dict(data or {})
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValidationError({"config": f"Unknown GRPO settings: {', '.join(unknown)}."})
        values = {}
        errors: dict[str, str] = {}
        for name, value in data.items():
            kind = type(getattr(cls, name))
            try:
                number = float(value) if not isinstance(value, bool) else None
                values[name] = kind(value) if kind is float else int(value)
                if kind is int and number != values[name]:
                    raise ValueError
            except (TypeError, ValueError, OverflowError):
                noun = "whole number" if kind is int else "number"
                errors[name] = f"{name} must be a {noun}, not {str(value)[:40]!r}."
        if errors:
            raise ValidationError(errors)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        errors: dict[str, str] = {}
        for name, (lo, hi) in BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                errors[name] = f"{name} must be a finite number."
            elif not lo <= value <= hi:
                errors[name] = f"{name} must be between {lo:,} and {hi:,}, not {value:,}."
        if errors:
            raise ValidationError(errors)
        if self.num_generations < 2:
            errors["num_generations"] = "GRPO compares completions: num_generations must be at least 2."
        generation_batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if generation_batch % max(1, self.num_generations):
            errors["per_device_train_batch_size"] = (
                f"batch size x gradient accumulation ({generation_batch}) must be divisible by num_generations "
                f"({self.num_generations})."
            )
        if self.learning_rate <= 0:
            errors["learning_rate"] = "learning_rate must be above 0."
        if self.temperature <= 0:
            errors["temperature"] = "temperature must be above 0."
        if errors:
            raise ValidationError(errors)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# Every setting's bounds (inclusive): generous for real runs, small enough that nothing absurd is queued and every
# value fits its database column. Forms, the API and the CLI all check against these.
BOUNDS: dict[str, tuple[int | float, int | float]] = {
    "learning_rate": (0.0, 1.0),
    "num_generations": (1, 256),
    "per_device_train_batch_size": (1, 1024),
    "gradient_accumulation_steps": (1, 1024),
    "max_completion_length": (1, 131_072),
    "max_tool_calling_iterations": (1, 1000),
    "max_steps": (1, 1_000_000),
    "beta": (0.0, 100.0),
    "temperature": (0.0, 5.0),
    "seed": (0, 2**32 - 1),
    "save_steps": (1, 1_000_000),
    "step_timeout": (0.1, 3600.0),
}

HELP = {
    "learning_rate": "Adam learning rate.",
    "num_generations": "Completions sampled per prompt (the GRPO group size G).",
    "per_device_train_batch_size": "Rollouts per step per device; divisible by num_generations.",
    "gradient_accumulation_steps": "Steps to accumulate before an optimizer update.",
    "max_completion_length": "Token budget for all turns of an episode together.",
    "max_tool_calling_iterations": "Most tool-call turns in one episode.",
    "max_steps": "Optimizer steps of the run.",
    "beta": "KL coefficient against the reference model (0 disables the reference model).",
    "temperature": "Sampling temperature of rollouts.",
    "seed": "Seed of the trainer and of the dataset's environment seeds.",
    "save_steps": "Save a checkpoint every this many steps (resume starts from the last).",
    "step_timeout": "Seconds one environment step may take before the episode is cut off.",
}
