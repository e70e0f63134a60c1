from __future__ import annotations

from openenv.core.env_server.types import Action, Observation, State
from pydantic import ConfigDict, Field


class WordGuessAction(Action):
    """Guess the hidden five-letter word.

    The reply marks each letter: G right place, Y elsewhere in the word, . absent.
    """

    model_config = ConfigDict(json_schema_extra={"x-tool-name": "guess_word"})

    word: str = Field(description="A five-letter English word, lowercase.", max_length=64)


class WordGuessObservation(Observation):
    message: str = ""
    feedback: str = Field(default="", description="One mark per letter: G right place, Y elsewhere, . not in the word.")
    guessed: str = ""
    guesses_left: int = 0
    word_length: int = 5


class WordGuessState(State):
    secret: str = ""
    max_guesses: int = 6
    guesses: list[str] = Field(default_factory=list)
    solved: bool = False
