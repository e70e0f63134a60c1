from __future__ import annotations

import random
import uuid
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from ..models import GridObservation, GridState, MoveAction

DELTAS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


class GridCatchEnvironment(Environment[MoveAction, GridObservation, GridState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = GridState()

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        size: int = 5,
        walls: int = 3,
        max_moves: int = 12,
        **kwargs: Any,
    ) -> GridObservation:
        size, n_walls = max(3, int(size)), max(0, int(walls))
        rng = random.Random(seed)
        cells = [[r, c] for r in range(size) for c in range(size)]
        rng.shuffle(cells)
        agent, goal, *rest = cells
        self._state = GridState(
            episode_id=episode_id or str(uuid.uuid4()),
            size=size,
            agent=agent,
            goal=goal,
            walls=rest[: min(n_walls, len(rest))],
            max_moves=int(max_moves),
        )
        return self._observe("Reach G by moving up, down, left or right.", 0.0, done=False)

    def step(self, action: MoveAction, timeout_s: float | None = None, **kwargs: Any) -> GridObservation:
        s = self._state
        if s.reached or s.step_count >= s.max_moves:
            return self._observe("The episode is over; call reset to play again.", 0.0, done=True)
        s.step_count += 1
        dr, dc = DELTAS[action.direction]
        target = [s.agent[0] + dr, s.agent[1] + dc]
        inside = 0 <= target[0] < s.size and 0 <= target[1] < s.size
        if not inside or target in s.walls:
            message = f"Blocked moving {action.direction}."
        else:
            s.agent = target
            message = f"Moved {action.direction}."
        if s.agent == s.goal:
            s.reached = True
            # Reaching the goal pays 1.0, less a little for every move beyond the shortest path's length.
            return self._observe("Caught the goal!", round(max(0.5, 1.0 - 0.02 * s.step_count), 4), done=True)
        return self._observe(message, 0.0, done=s.step_count >= s.max_moves)

    def _observe(self, message: str, reward: float, *, done: bool) -> GridObservation:
        s = self._state
        rows = []
        for r in range(s.size):
            row = ""
            for c in range(s.size):
                cell = [r, c]
                row += "A" if cell == s.agent else "G" if cell == s.goal else "#" if cell in s.walls else "."
            rows.append(row)
        return GridObservation(
            message=message,
            board="\n".join(rows),
            position=list(s.agent),
            goal=list(s.goal),
            moves_left=max(0, s.max_moves - s.step_count),
            reward=reward,
            done=done,
        )

    @property
    def state(self) -> GridState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="grid-catch",
            description="Walk a small grid world with a move tool and reach the goal.",
            version="1.0.0",
            author="Trainyard",
        )
