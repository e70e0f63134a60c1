"""The OpenEnv server: `uvicorn guess_number.server.app:app` (sessions over /ws)."""

from __future__ import annotations

import os

from openenv.core.env_server.http_server import create_app

from ..models import GuessAction, GuessObservation, GuessState
from .environment import GuessNumberEnvironment

app = create_app(
    GuessNumberEnvironment,
    GuessAction,
    GuessObservation,
    env_name="guess-number",
    max_concurrent_envs=int(os.environ.get("OPENENV_MAX_SESSIONS", "64")),
    state_cls=GuessState,
)
