"""What a server really does, measured when a version is added: how many sessions it takes, what `seed` does.

Declared numbers are not enough: upstream servers read `MAX_CONCURRENT_ENVS` (default 8) or allow one session
whatever they are told, and some `reset()` methods take no seed at all (the server drops it). A run that trusts the
declaration dies at step 1 with CAPACITY_REACHED, or gives a GRPO group's rollouts different starts.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from envs.actions import random_action
from envs.session import EnvError, EnvSession, SessionBroken
from envs.tools import ToolSpec
from envs.volatile import steady


@dataclass(frozen=True)
class CapacityMeasure:
    accepted: int  # sessions open and reset at once before one was refused (or the bound was reached)
    bound: int
    note: str

    @property
    def reached_bound(self) -> bool:
        return self.accepted >= self.bound


def measure_capacity(endpoint: str, *, bound: int, timeout: float = 30.0) -> CapacityMeasure:
    """Open sessions (each reset, so the server really holds one) until one is refused or `bound` are open."""
    opened: list[EnvSession] = []
    note = ""
    try:
        for index in range(bound):
            session = EnvSession(endpoint, timeout=timeout)
            try:
                session.open()
                session.reset(seed=index)
            except (EnvError, SessionBroken) as exc:
                note = f"session {index + 1} refused: {str(exc)[:200]}"
                session.close()
                break
            opened.append(session)
    finally:
        for session in opened:
            session.close()
    accepted = len(opened)
    if not note:
        note = f"accepted all {bound} sessions tried"
    return CapacityMeasure(accepted=accepted, bound=bound, note=note)


def _view(result) -> dict:
    observation = steady({k: v for k, v in result.observation.items() if k != "episode_id"})
    return {"observation": observation, "reward": result.reward, "done": result.done}


def _start(endpoint: str, seed: int, timeout: float, actions: list[dict]) -> str:
    """What an episode shows from reset(seed) through a few fixed actions: a hidden start (a vault's code) shows
    in the answers to the actions even when the first observation is the same for every seed."""
    seen = []
    with EnvSession(endpoint, timeout=timeout) as session:
        seen.append(_view(session.reset(seed=seed)))
        for action in actions:
            try:
                result = session.step(action)
            except EnvError as exc:
                seen.append({"error": exc.code})
                continue
            seen.append(_view(result))
            if result.done:
                break
    return json.dumps(seen, sort_keys=True, default=str)


def measure_seeding(
    endpoint: str,
    *,
    tools: list[ToolSpec] = (),
    timeout: float = 30.0,
    seeds: tuple[int, ...] = (11, 12, 13),
    repeats: int = 4,
) -> str:
    """`honoured` (same seed, same episode; other seeds, other episodes), `ignored` (the same seed gave different
    episodes: GRPO groups would start apart), `constant` (every seed gives the same episode), or `unknown`."""
    rng = random.Random(7)
    actions = [random_action(list(tools), rng) for _ in range(3)] if tools else []
    try:
        first = _start(endpoint, seeds[0], timeout, actions)
        # The same seed again, up to `repeats` times: a server that ignores the seed and draws from a few starts
        # gives the same episode twice by chance (OpenEnv's finqa on a 4-question dataset: 1 in 4); each probe that
        # trusts this (clean reset compares a used session with a fresh one) would then judge by chance.
        for _ in range(repeats):
            if _start(endpoint, seeds[0], timeout, actions) != first:
                return "ignored"
        others = {_start(endpoint, seed, timeout, actions) for seed in seeds[1:]}
    except (EnvError, SessionBroken):
        return "unknown"
    if others == {first}:
        return "constant"
    return "honoured"
