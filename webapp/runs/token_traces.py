"""Per-token numbers of a traced episode, packed compactly (float16, two bytes a number; one byte a mask flag) and
read back for the trajectory viewer."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

from webapp.runs.models import Episode, TokenTrace

MOST_TOKENS = 16_384  # of one completion kept (the rest is cut, and the trace says so)
HALF_MAX = 65_504.0  # the largest float16


def half_pack(values: Sequence[float]) -> bytes:
    clipped = [max(-HALF_MAX, min(HALF_MAX, v)) if math.isfinite(v) else 0.0 for v in values]
    return struct.pack(f"<{len(clipped)}e", *clipped)


def half_unpack(data: bytes | memoryview) -> list[float]:
    raw = bytes(data)
    return [round(v, 4) for v in struct.unpack(f"<{len(raw) // 2}e", raw)]


def trace_build(*, run_id: int, step: int, rank: int, group: int, index: int, tokens: list[str],
                logprobs: Sequence[float], entropies: Sequence[float], advantages: Sequence[float],
                trained: Sequence[int]) -> TokenTrace:  # fmt: skip
    n = min(len(tokens), MOST_TOKENS)
    flags = bytes(1 if t else 0 for t in trained[:n])
    return TokenTrace(run_id=run_id, step=step, rank=rank, group=group, index_in_group=index, tokens=tokens[:n],
                      logprobs=half_pack(logprobs[:n]), entropies=half_pack(entropies[:n]),
                      advantages=half_pack(advantages[:n]), trained=flags)  # fmt: skip


def trace_dict(trace: TokenTrace) -> dict[str, Any]:
    return {
        "step": trace.step,
        "rank": trace.rank,
        "group": trace.group,
        "index": trace.index_in_group,
        "tokens": trace.tokens,
        "logprob": half_unpack(trace.logprobs),
        "entropy": half_unpack(trace.entropies),
        "advantage": half_unpack(trace.advantages),
        "trained": list(bytes(trace.trained)),
    }


def episode_trace(episode: Episode) -> TokenTrace | None:
    return TokenTrace.objects.filter(run_id=episode.run_id, step=episode.step, rank=episode.rank, group=episode.group,
                                     index_in_group=episode.index_in_group).first()  # fmt: skip


def traced_keys(run_id: int, steps: set[int]) -> set[tuple[int, int, int, int]]:
    """(step, rank, group, index) of the traced episodes among these steps."""
    rows = TokenTrace.objects.filter(run_id=run_id, step__in=steps).values_list("step", "rank", "group",
                                                                                "index_in_group")  # fmt: skip
    return set(rows)
