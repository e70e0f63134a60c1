"""grid-catch, driven through OpenEnv's own client over a real socket."""

from __future__ import annotations

from collections import deque

import pytest
from openenv.core.generic_client import GenericEnvClient


@pytest.fixture
def game(served):
    with GenericEnvClient(base_url=served("grid-catch")).sync() as client:
        yield client


def shortest_path(board: list[str], start: list[int], goal: list[int]) -> list[str] | None:
    moves = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
    queue, seen = deque([(tuple(start), [])]), {tuple(start)}
    while queue:
        (r, c), path = queue.popleft()
        if [r, c] == goal:
            return path
        for name, (dr, dc) in moves.items():
            nr, nc = r + dr, c + dc
            if 0 <= nr < len(board) and 0 <= nc < len(board[0]) and board[nr][nc] != "#" and (nr, nc) not in seen:
                seen.add((nr, nc))
                queue.append(((nr, nc), [*path, name]))
    return None


def test_walking_the_shortest_path_catches_the_goal(game):
    for seed in range(20):
        first = game.reset(seed=seed)
        obs = first.observation
        path = shortest_path(obs["board"].splitlines(), obs["position"], obs["goal"])
        if path:
            break
    results = [game.step({"direction": d}) for d in path]
    assert results[-1].done and results[-1].reward > 0.5
    assert all(r.reward == 0.0 for r in results[:-1])


def test_walls_and_edges_block(game):
    for seed in range(50):
        game.reset(seed=seed, size=3, walls=0)
        row, col = game.state()["agent"]
        if [row, col] != [1, 1]:
            break
    direction = "up" if row == 0 else "down" if row == 2 else "left" if col == 0 else "right"
    result = game.step({"direction": direction})
    assert result.observation["position"] == [row, col]
    assert result.observation["message"] == f"Blocked moving {direction}."


def test_an_unknown_direction_is_refused(served):
    from envs.session import EnvError, EnvSession

    with EnvSession(served("grid-catch")) as session:
        session.reset(seed=1)
        with pytest.raises(EnvError, match="VALIDATION_ERROR"):
            session.step({"direction": "diagonal"})


def test_the_episode_ends_after_max_moves(game):
    game.reset(seed=2, max_moves=2)
    game.step({"direction": "up"})
    last = game.step({"direction": "down"})
    assert last.done is True
