"""A TRL callback that times each training step: the benches' common measure (not a bench itself)."""

from __future__ import annotations

import time


def step_timer():
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times: list[float] = []
            self._started = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self._started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self._started)

    return StepTimer()
