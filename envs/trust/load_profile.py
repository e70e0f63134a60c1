"""A version's load profile: what its server sustains under the concurrent sessions training puts on it.

GRPO holds one session per rollout of a generation batch and steps them together, so "1.1 ms a step" alone says
little: a server that serialises its sessions gives 32 rollouts 32 times the wait. Here N sessions step random
valid actions at once for a short while, for N in 1, 8, 32 and the measured capacity (never above it), and each
level reports steps/s with p50 and p99 step latency; errors are counted, never hidden in the numbers.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from envs.actions import random_action
from envs.session import AsyncEnvSession, EnvError, SessionBroken
from envs.tools import ToolSpec

LEVELS = (1, 8, 32)


def levels_for(capacity: int) -> list[int]:
    return sorted({n for n in (*LEVELS, capacity) if 1 <= n <= capacity})


def _percentile(samples: list[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _session_loop(endpoint: str, tools: list[ToolSpec], seed: int, until: float, timeout: float,
                        latencies: list[float], errors: list[str]) -> None:  # fmt: skip
    rng = random.Random(seed)
    session = AsyncEnvSession(endpoint, timeout=timeout)
    try:
        await session.reset(seed=seed)
        while time.perf_counter() < until:
            started = time.perf_counter()
            try:
                result = await session.step(random_action(tools, rng))
            except EnvError as exc:
                errors.append(exc.code)
                continue
            latencies.append(time.perf_counter() - started)
            if result.done:
                await session.reset(seed=rng.randrange(10**6))
    except (EnvError, SessionBroken) as exc:
        errors.append(str(exc)[:120])
    finally:
        await session.close()


async def _level(endpoint: str, tools: list[ToolSpec], sessions: int, seconds: float, timeout: float) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    started = time.perf_counter()
    until = started + seconds
    timeout = min(timeout, seconds + 2.0)  # a step slower than the window is an error here, not a long wait
    await asyncio.gather(*(_session_loop(endpoint, tools, 1000 + i, until, timeout, latencies, errors)
                           for i in range(sessions)))  # fmt: skip
    took = time.perf_counter() - started
    p50, p99 = _percentile(latencies, 0.5), _percentile(latencies, 0.99)
    return {
        "sessions": sessions,
        "steps": len(latencies),
        "steps_per_s": round(len(latencies) / took, 1),
        "p50_ms": round(p50 * 1e3, 2) if p50 is not None else None,
        "p99_ms": round(p99 * 1e3, 2) if p99 is not None else None,
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
    }


def load_profile(endpoint: str, tools: list[ToolSpec], *, capacity: int, seconds: float = 1.5,
                 timeout: float = 30.0, progress=lambda sessions: None) -> list[dict[str, Any]]:  # fmt: skip
    """One row per concurrency level, in order."""
    rows = []
    for sessions in levels_for(capacity):
        progress(sessions)
        rows.append(asyncio.run(_level(endpoint, tools, sessions, seconds, timeout)))
    return rows
