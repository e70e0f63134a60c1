"""What may differ between two plays of one episode without being its state. Every comparison of episodes (the
seeding measure, the trust probes) leaves these out, or it would call such an environment random or dirty.

Two kinds: how long something took or when it happened (OpenEnv's REPL sends `execution_time`), and counters that
the environment documents as running since it was created (ALE's `frame_number`: "Total frame number since
environment creation", and its sibling `episode_frame_number` beside it: a field whose `episode_` twin the
observation carries counts beyond episodes by design; the twin stays compared). A step counter that an environment
forgets to reset is neither: its name is no timing and its description does not say it counts for the server's
life, so a dirty reset is still caught.

A third: names of the session or the episode rather than its state (an `episode_id` echoed in the metadata; the
tenant that RFC 003's HTTP template echoes as `database_id`, one per session: envs.http_session).

Whether a call changed anything is one more comparison, and there an episode's step counter is left out too: it
says that a step was taken, not that the action did anything (OpenEnv's maze answers a move into a wall with -0.75,
the same position, and `metadata.step` one higher). Episodes are still compared with it.
"""

from __future__ import annotations

import re
from typing import Any

TIMING_NAME = re.compile(r"(^|_)(time|times|duration|latency|elapsed|timestamp|seconds|secs|ms|took)(_|$)", re.I)
SESSION_IDENTITY = frozenset({"episode_id", "database_id"})
STEP_COUNTER_NAME = re.compile(r"^(num_)?(step|steps|turn|turns)(_(count|counter|number|index|idx))?$"
                               r"|^(move|moves)_(count|counter|number)$|^num_moves$", re.I)  # fmt: skip
LIFETIME_DESCRIPTION = re.compile(
    r"since (the )?(environment|emulator|server|process)( was)? (creation|created|start|started|launch)", re.I
)


def lifetime_fields(observation_schema: dict[str, Any] | None) -> frozenset[str]:
    """Observation fields whose description says they count since the environment was created."""
    properties = (observation_schema or {}).get("properties", {})
    return frozenset(k for k, v in properties.items() if LIFETIME_DESCRIPTION.search(str(v.get("description", ""))))


def steady(value: Any, lifetime: frozenset[str] = frozenset(), dropped: set[str] | None = None) -> Any:
    """The value without its timings, lifetime counters and session names (at any depth); names what it dropped
    into `dropped`."""
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            number = isinstance(item, int | float) and not isinstance(item, bool)
            beyond_episodes = key in lifetime or f"episode_{key}" in value
            identity = key in SESSION_IDENTITY and isinstance(item, str)
            if identity or (number and (TIMING_NAME.search(str(key)) or beyond_episodes)):
                if dropped is not None:
                    dropped.add(str(key))
                continue
            kept[key] = steady(item, lifetime, dropped)
        return kept
    if isinstance(value, list):
        return [steady(item, lifetime, dropped) for item in value]
    return value


def without_step_counters(value: Any) -> Any:
    """The value without its step counters (whole numbers named step, step_count, turn, num_moves …), at any depth."""
    if isinstance(value, dict):
        return {
            key: without_step_counters(item)
            for key, item in value.items()
            if not (isinstance(item, int) and not isinstance(item, bool) and STEP_COUNTER_NAME.match(str(key)))
        }
    if isinstance(value, list):
        return [without_step_counters(item) for item in value]
    return value
