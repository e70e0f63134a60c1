"""grid-catch: walk a small grid world with a move tool and catch the goal."""

from .models import GridObservation, GridState, MoveAction

__all__ = ["GridObservation", "GridState", "MoveAction"]
