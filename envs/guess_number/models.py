from __future__ import annotations

from typing import Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import ConfigDict, Field


class GuessAction(Action):
    """Guess the hidden number. The reply says whether the hidden number is higher or lower."""

    model_config = ConfigDict(json_schema_extra={"x-tool-name": "guess"})

    number: int = Field(description="Your guess: a whole number within the announced range.")


class GuessObservation(Observation):
    message: str = Field(default="", description="What the game says to the player.")
    hint: Literal["start", "higher", "lower", "correct", "out_of_range", "over"] = "start"
    low: int = 1
    high: int = 16
    guesses_left: int = 0


class GuessState(State):
    secret: int = 0
    low: int = 1
    high: int = 16
    max_guesses: int = 6
    guesses: list[int] = Field(default_factory=list)
    solved: bool = False
