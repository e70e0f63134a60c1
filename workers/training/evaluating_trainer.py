"""Evaluation inside a GRPOTrainer: the same generation, tool loop (concurrent dispatch included), adapter and
reward as training, with an optimizer that never steps. A run's evals during training ride on TRL's own
`eval_dataset` / `eval_steps` / `eval_on_start`; the standalone evaluator calls `evaluate()` once.

`EvalPhase` tells the reward function whether it is scoring a training batch or an evaluation's, and greedy
decoding is switched on for the evaluation only (TRL samples in both)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class EvalPhase:
    """The recorder of the evaluation in progress (None while training) and the steps already evaluated."""

    recorder: Any = None
    evaluated_steps: list[int] = field(default_factory=list)


def greedy_generation(trainer) -> Callable[[], None]:
    """Switch the trainer's generation to greedy decoding; returns what switches it back. transformers' generate
    reads both the generation config and the kwargs TRL hands to `unwrap_model_for_generation`; vLLM reads its own
    sampling temperature (0: greedy)."""
    config = getattr(trainer, "generation_config", None)
    kwargs = getattr(trainer, "generation_kwargs", None)
    vllm = getattr(trainer, "vllm_generation", None)
    saved = (getattr(config, "do_sample", None), dict(kwargs) if isinstance(kwargs, dict) else None,
             getattr(vllm, "temperature", None))  # fmt: skip
    if config is not None:
        config.do_sample = False
    if isinstance(kwargs, dict):
        kwargs["do_sample"] = False
    if vllm is not None and hasattr(vllm, "temperature"):
        vllm.temperature = 0.0

    def restore() -> None:
        if config is not None:
            config.do_sample = saved[0]
        if isinstance(kwargs, dict):
            kwargs.clear()
            kwargs.update(saved[1])
        if vllm is not None and saved[2] is not None:
            vllm.temperature = saved[2]

    return restore


def evaluating_trainer(base: type, *, greedy: bool, begin: Callable[[Any], None], end: Callable[[Any], None]) -> type:
    """`base` (the concurrent-tools GRPOTrainer) whose `evaluate` calls `begin(trainer)` and `end(trainer)` around
    TRL's own, decoding greedily when `greedy`."""

    class EvaluatingGRPOTrainer(base):
        def evaluate(self, *args, **kwargs):
            begin(self)
            restore = greedy_generation(self) if greedy else (lambda: None)
            try:
                metrics = super().evaluate(*args, **kwargs)
            finally:
                restore()
            end(self)
            return metrics

    return EvaluatingGRPOTrainer
