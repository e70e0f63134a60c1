from __future__ import annotations

import random
import uuid
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from ..models import GuessAction, GuessObservation, GuessState


class GuessNumberEnvironment(Environment[GuessAction, GuessObservation, GuessState]):
    """All state lives on the instance: every WebSocket session gets its own."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = GuessState()

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        low: int = 1,
        high: int = 16,
        max_guesses: int = 6,
        **kwargs: Any,
    ) -> GuessObservation:
        low, high, max_guesses = int(low), int(high), int(max_guesses)
        if high <= low or max_guesses < 1:
            raise ValueError("need low < high and max_guesses >= 1")
        rng = random.Random(seed)
        self._state = GuessState(
            episode_id=episode_id or str(uuid.uuid4()),
            step_count=0,
            secret=rng.randint(low, high),
            low=low,
            high=high,
            max_guesses=max_guesses,
        )
        return GuessObservation(
            message=f"I picked a whole number from {low} to {high}. You have {max_guesses} guesses.",
            hint="start",
            low=low,
            high=high,
            guesses_left=max_guesses,
            reward=0.0,
        )

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> GuessObservation:
        s = self._state
        left = s.max_guesses - len(s.guesses)
        if s.solved or left <= 0:
            return self._observe("The game is over; call reset to play again.", "over", 0.0, done=True)
        s.step_count += 1
        if not s.low <= action.number <= s.high:
            # An out-of-range guess still costs a guess: otherwise a policy could probe for free.
            s.guesses.append(action.number)
            return self._observe(
                f"{action.number} is outside {s.low}..{s.high}.", "out_of_range", 0.0, done=self._out_of_guesses()
            )
        s.guesses.append(action.number)
        if action.number == s.secret:
            s.solved = True
            # Solving always pays; fewer guesses pay more (1.0 on the first, down to 0.5).
            reward = 1.0 - 0.5 * (len(s.guesses) - 1) / max(1, s.max_guesses - 1)
            return self._observe(f"{action.number} is correct!", "correct", round(reward, 4), done=True)
        hint = "higher" if s.secret > action.number else "lower"
        return self._observe(f"The number is {hint} than {action.number}.", hint, 0.0, done=self._out_of_guesses())

    def _out_of_guesses(self) -> bool:
        return len(self._state.guesses) >= self._state.max_guesses

    def _observe(self, message: str, hint: str, reward: float, *, done: bool) -> GuessObservation:
        s = self._state
        return GuessObservation(
            message=message,
            hint=hint,
            low=s.low,
            high=s.high,
            guesses_left=max(0, s.max_guesses - len(s.guesses)),
            reward=reward,
            done=done,
        )

    @property
    def state(self) -> GuessState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="guess-number",
            description="Find a hidden whole number from higher/lower hints; fewer guesses earn more.",
            version="1.0.0",
            author="Trainyard",
        )
