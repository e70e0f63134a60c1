"""`trainyard.trl.recorded`: an environment class whose tool calls are recorded, which TRL still reads the same."""

from __future__ import annotations

import inspect

import pytest
from trainyard.trl import _with_calls, recorded


class Board:
    """A board game."""

    def reset(self, **kwargs) -> str:
        self.moves = []
        return "new board"

    def move(self, square: int) -> str:
        """Play a square.

        Args:
            square: 0 to 8.
        """
        if not 0 <= square <= 8:
            raise ValueError(f"no square {square}")
        self.moves.append(square)
        return f"played {square}"

    @staticmethod
    def rules(topic: str) -> str:
        """Read the rules.

        Args:
            topic: what to read about.
        """
        return f"the rules of {topic}"


def test_tools_keep_what_trl_reads_and_their_calls_are_recorded_with_errors():
    Recorded = recorded(Board)
    assert Recorded.__name__ == "Board" and recorded(Recorded) is Recorded
    assert inspect.signature(Recorded.move) == inspect.signature(Board.move)  # TRL builds the tool schema from it
    assert Recorded.move.__doc__ == Board.move.__doc__
    board = Recorded()
    board.reset()
    assert board.move(square=4) == "played 4"
    with pytest.raises(ValueError):
        board.move(square=12)
    assert [c["name"] for c in board._trainyard_calls] == ["move", "move"]
    assert "error" not in board._trainyard_calls[0] and board._trainyard_calls[1]["error"] == "ValueError: no square 12"
    turns = _with_calls([{"role": "assistant", "content": ""}, {"role": "tool", "name": "move", "content": "played 4"},
                         {"role": "tool", "name": "move", "content": "{'error': 'no square 12'}"}], board)  # fmt: skip
    assert turns[1]["seconds"] >= 0 and "error" not in turns[1] and turns[2]["error"].startswith("ValueError")
    board.reset()
    assert board._trainyard_calls == []  # each episode its own
    assert set(recorded({"a": Board, "b": Board})) == {"a", "b"}


def test_a_public_static_method_is_a_tool_as_trl_offers_it_and_is_recorded_without_self():
    # TRL lists a class's functions as tools, a @staticmethod among them, and calls it without `self`.
    from transformers.utils import get_json_schema

    Recorded = recorded(Board)
    board = Recorded()
    board.reset()
    assert inspect.signature(board.rules) == inspect.signature(Board.rules)
    assert get_json_schema(board.rules) == get_json_schema(Board.rules)
    assert board.rules(topic="castling") == "the rules of castling"
    assert board._trainyard_calls[0]["name"] == "rules" and "error" not in board._trainyard_calls[0]
