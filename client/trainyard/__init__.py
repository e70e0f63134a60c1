"""Trainyard's Python client: report a GRPO run launched anywhere to the dashboard.

    run = trainyard.init(environment="guess-number", config={...})   # TRAINYARD_URL, TRAINYARD_TOKEN
    run.log({"reward": 0.4}, step=1); run.log_episodes([...]); run.finish()

With TRL: `trainyard.watch(trainer, environment="guess-number")` before `trainer.train()`.
"""

from __future__ import annotations

from typing import Any

from trainyard.http import ApiError
from trainyard.run import Run, init

__all__ = ["ApiError", "Run", "TrainyardCallback", "init", "watch"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:  # TRL's parts import transformers: only when asked for
    if name in ("TrainyardCallback", "watch"):
        from trainyard import trl

        return getattr(trl, name)
    raise AttributeError(name)
