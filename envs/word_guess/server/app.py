"""The OpenEnv server: `uvicorn word_guess.server.app:app` (sessions over /ws)."""

from __future__ import annotations

import os

from openenv.core.env_server.http_server import create_app

from ..models import WordGuessAction, WordGuessObservation, WordGuessState
from .environment import WordGuessEnvironment

app = create_app(
    WordGuessEnvironment,
    WordGuessAction,
    WordGuessObservation,
    env_name="word-guess",
    max_concurrent_envs=int(os.environ.get("OPENENV_MAX_SESSIONS", "64")),
    state_cls=WordGuessState,
)
