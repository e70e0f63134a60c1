from __future__ import annotations

from typing import Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import ConfigDict, Field


class MoveAction(Action):
    """Move one cell on the grid. Walls (#) and the edge block a move."""

    model_config = ConfigDict(json_schema_extra={"x-tool-name": "move"})

    direction: Literal["up", "down", "left", "right"] = Field(description="Which way to move.")


class GridObservation(Observation):
    message: str = ""
    board: str = Field(default="", description="The grid, one row a line: A you, G goal, # wall, . floor.")
    position: list[int] = Field(default_factory=list, description="Your [row, column].")
    goal: list[int] = Field(default_factory=list, description="The goal's [row, column].")
    moves_left: int = 0


class GridState(State):
    size: int = 5
    agent: list[int] = Field(default_factory=list)
    goal: list[int] = Field(default_factory=list)
    walls: list[list[int]] = Field(default_factory=list)
    max_moves: int = 12
    reached: bool = False
