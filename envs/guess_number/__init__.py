"""guess-number: find a hidden integer from higher/lower hints. Self-contained; copy this folder to make a new one."""

from .models import GuessAction, GuessObservation, GuessState

__all__ = ["GuessAction", "GuessObservation", "GuessState"]
