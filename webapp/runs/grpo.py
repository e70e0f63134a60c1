"""GRPO settings of a run: defaults, help text and validation in one place (forms, services and the CLI use it)."""

from __future__ import annotations

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
                values[name] = kind(value)
            except (TypeError, ValueError):
                errors[name] = f"{name} must be a {kind.__name__}, not {value!r}."
        if errors:
            raise ValidationError(errors)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        errors: dict[str, str] = {}
        positive = ["num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
                    "max_completion_length", "max_tool_calling_iterations", "max_steps", "save_steps"]  # fmt: skip
        for name in positive:
            if getattr(self, name) < 1:
                errors[name] = f"{name} must be at least 1."
        if self.num_generations < 2:
            errors["num_generations"] = "GRPO compares completions: num_generations must be at least 2."
        generation_batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if generation_batch % max(1, self.num_generations):
            errors["per_device_train_batch_size"] = (
                f"batch size x gradient accumulation ({generation_batch}) must be divisible by num_generations "
                f"({self.num_generations})."
            )
        if not 0 < self.learning_rate < 1:
            errors["learning_rate"] = "learning_rate must be between 0 and 1."
        if self.beta < 0:
            errors["beta"] = "beta must not be negative."
        if not 0 < self.temperature <= 5:
            errors["temperature"] = "temperature must be in (0, 5]."
        if self.step_timeout <= 0:
            errors["step_timeout"] = "step_timeout must be positive."
        if errors:
            raise ValidationError(errors)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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
