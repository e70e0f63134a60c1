"""word-guess: a Wordle-like game over a word list shipped in this folder (nothing is downloaded)."""

from .models import WordGuessAction, WordGuessObservation, WordGuessState

__all__ = ["WordGuessAction", "WordGuessObservation", "WordGuessState"]
