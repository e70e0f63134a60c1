"""Refusals a game writes into its own text.

TextArena's games (OpenEnv's textarena environment: Wordle, and the rest of TextArena) answer a move they refuse with
a sentence appended to the game's conversation ("You attempted an invalid move. Reason: You have already guessed
'crane' before. …"), reward 0, the turn unchanged, and no error. Counted as accepted, a warm start teaches such calls
and a run's counters call them steps. Only the text that the step added is read (the conversation keeps every earlier
sentence), and only the sentence that TextArena addresses to the player who moved: a game that tells of another
player's invalid move has not refused ours. Its two-player games write "Player 1 attempted an invalid move" to the
player who moved, whose turn it stays: that is ours when the observation before the step gave the turn to player 1
(`current_player_id`, as OpenEnv's textarena environment shows it); with no turn shown, it is another player's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

REFUSED_MOVE_IN_WORDS = re.compile(r"\bYou attempted an invalid move\b[^\n]*")
A_PLAYERS_MOVE_REFUSED = re.compile(r"\bPlayer (\d+) attempted an invalid move\b[^\n]*")


def _texts(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _texts(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _texts(item, f"{path}[{index}]")


def added_text(before: Any, after: Any) -> str:
    """The text a step added to an observation: what each string that grew gained past its old self, and each string
    that is new or rewritten, whole."""
    old = dict(_texts(before))
    added = []
    for path, text in _texts(after):
        previous = old.get(path, "")
        if text != previous:
            added.append(text[len(previous) :] if text.startswith(previous) else text)
    return "\n".join(added)


def refused_in_words(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """The sentence in which the game refused the move, if the step's new text has one."""
    text = added_text(before, after)
    mover = str(before.get("current_player_id"))  # "None" when no turn is shown: no "Player N" sentence is ours
    found = REFUSED_MOVE_IN_WORDS.search(text) or next(
        (m for m in A_PLAYERS_MOVE_REFUSED.finditer(text) if m.group(1) == mover), None
    )
    return found.group(0)[:300] if found else None
