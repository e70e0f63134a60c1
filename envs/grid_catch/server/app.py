"""The OpenEnv server: `uvicorn grid_catch.server.app:app` (sessions over /ws)."""

from __future__ import annotations

import os

from openenv.core.env_server.http_server import create_app

from ..models import GridObservation, GridState, MoveAction
from .environment import GridCatchEnvironment

app = create_app(
    GridCatchEnvironment,
    MoveAction,
    GridObservation,
    env_name="grid-catch",
    max_concurrent_envs=int(os.environ.get("OPENENV_MAX_SESSIONS", "64")),
    state_cls=GridState,
)
