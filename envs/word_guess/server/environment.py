from __future__ import annotations

import random
import uuid
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from ..models import WordGuessAction, WordGuessObservation, WordGuessState

WORD_LENGTH = 5


@cache
def word_list() -> tuple[str, ...]:
    path = Path(__file__).resolve().parent.parent / "words.txt"
    words = (w.strip().lower() for w in path.read_text().splitlines())
    return tuple(sorted({w for w in words if len(w) == WORD_LENGTH and w.isalpha()}))


def mark(secret: str, guess: str) -> str:
    """Wordle marks: greens first, then yellows limited by how often each letter is left in the secret."""
    marks = ["."] * len(guess)
    remaining = Counter(s for s, g in zip(secret, guess, strict=True) if s != g)
    for i, (s, g) in enumerate(zip(secret, guess, strict=True)):
        if s == g:
            marks[i] = "G"
        elif remaining[g] > 0:
            marks[i] = "Y"
            remaining[g] -= 1
    return "".join(marks)


class WordGuessEnvironment(Environment[WordGuessAction, WordGuessObservation, WordGuessState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = WordGuessState()

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, max_guesses: int = 6, **kwargs: Any
    ) -> WordGuessObservation:
        rng = random.Random(seed)
        self._state = WordGuessState(
            episode_id=episode_id or str(uuid.uuid4()),
            secret=rng.choice(word_list()),
            max_guesses=int(max_guesses),
        )
        return WordGuessObservation(
            message=f"Guess the {WORD_LENGTH}-letter word in {self._state.max_guesses} tries.",
            guesses_left=self._state.max_guesses,
            reward=0.0,
        )

    def step(self, action: WordGuessAction, timeout_s: float | None = None, **kwargs: Any) -> WordGuessObservation:
        s = self._state
        left = s.max_guesses - len(s.guesses)
        if s.solved or left <= 0:
            return self._observe("The game is over; call reset to play again.", "", "", 0.0, done=True)
        word = action.word.strip().lower()
        s.step_count += 1
        if len(word) != WORD_LENGTH or not word.isalpha():
            # A malformed word costs nothing but earns nothing: the model is told why.
            return self._observe(f"{word!r} is not a {WORD_LENGTH}-letter word.", "", word, 0.0, done=False)
        s.guesses.append(word)
        feedback = mark(s.secret, word)
        if word == s.secret:
            s.solved = True
            reward = 1.0 - 0.5 * (len(s.guesses) - 1) / max(1, s.max_guesses - 1)
            return self._observe("Solved!", feedback, word, round(reward, 4), done=True)
        done = len(s.guesses) >= s.max_guesses
        return self._observe(f"{word}: {feedback}", feedback, word, 0.0, done=done)

    def _observe(self, message: str, feedback: str, guessed: str, reward: float, *, done: bool):
        s = self._state
        return WordGuessObservation(
            message=message,
            feedback=feedback,
            guessed=guessed,
            guesses_left=max(0, s.max_guesses - len(s.guesses)),
            reward=reward,
            done=done,
        )

    @property
    def state(self) -> WordGuessState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="word-guess",
            description="A Wordle-like game: find the five-letter word from per-letter feedback.",
            version="1.0.0",
            author="Trainyard",
        )
