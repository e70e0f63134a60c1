"""Evidence people can act on: where two episodes differ (field path and values), the numbers an episode shows,
and for each probe one sentence on what its failure means for training and what to fix."""

from __future__ import annotations

import json
import re
from typing import Any

ADVICE = {
    "steps": "What it means: a run on it ends every episode at its first call (an error instead of an observation), "
    "so there is nothing to learn and no probe can judge its episodes; fix: the server's step(), which fails "
    "whatever it is sent (the error names the cause).",
    "clean_reset": "What it means: an episode starts where the last one ended, so its reward depends on the rollout "
    "before it and a GRPO group compares unequal starts; fix: rebuild all episode state (counters included) in "
    "reset().",
    "seed_determinism": "What it means: the rollouts of one GRPO group start from different states, so their "
    "advantages compare luck rather than behaviour and no episode can be replayed; fix: draw every random choice "
    "from a generator seeded in reset(seed), or declare the randomness in openenv.yaml "
    "(validation: reward: variance_tolerance).",
    "session_isolation": "What it means: concurrent rollouts change each other's episodes, so a reward depends on "
    "what else is running and training cannot be reproduced; fix: keep all episode state on the Environment "
    "instance (never in module globals or class attributes), one instance per session.",
    "reward_integrity": "What it means: the policy can be paid for what it writes rather than what it does, and will "
    "learn to write it (or a bad input crashes the server mid-run); fix: compute rewards only from the "
    "environment's own state and refuse invalid actions with a validation error.",
    "hidden_state": "What it means: the policy can read what it should infer, and will learn to copy it; fix: leave "
    "the hidden field out of the observation (or declare it, if it is meant to show).",
    "capacity": "What it means: a run sized by the declared capacity fails with CAPACITY_REACHED at its first step, "
    "or crowds more sessions onto a replica than it was built for; fix: declare the number of sessions the server "
    "really holds (max_concurrent_envs, SUPPORTS_CONCURRENT_SESSIONS).",
    "timeouts": "What it means: a rollout that sends such an input waits out the whole step timeout and loses its "
    "episode, and every hung step keeps a session slot busy; fix: bound the work a step does (check the input, cap "
    "loops and sizes) so that every input answers quickly.",
}


def leaf_values(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(field path, value) for every leaf: `metadata.layout[2].cell`."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in leaf_values(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in leaf_values(v, f"{path}[{i}]")]
    return [(path, value)]


NUMBER_IN_TEXT = re.compile(r"-?\d+(?:\.\d+)?")


def numbers_in(value: Any) -> list[tuple[str, float]]:
    """Every number among the leaves, including the first few written inside text (`message#0` in "Step 3 of 8")."""
    out = []
    for path, leaf in leaf_values(value):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, int | float):
            out.append((path, float(leaf)))
        elif isinstance(leaf, str):
            out += [(f"{path}#{i}", float(m)) for i, m in enumerate(NUMBER_IN_TEXT.findall(leaf)[:4])]
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "…"


def _texts_apart(a: str, b: str, context: int = 40) -> str:
    """Two long texts that share a beginning, shown where they part (two identical-looking prefixes ending in "…"
    told nobody anything)."""
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, at - context)

    def window(text: str) -> str:
        piece = text[start : at + context]
        shown = json.dumps(piece, ensure_ascii=False)[1:-1] or "(ends here)"
        return ("…" if start else "") + shown + ("…" if at + context < len(text) else "")

    return f'texts differ from character {at} (of {len(a)} and {len(b)}): "{window(a)}" vs "{window(b)}"'


def first_difference(a: str, b: str) -> str:
    """The first field where two recorded views (JSON, or "error CODE") differ: `observation.hint: "warmer" vs
    "colder"`."""
    try:
        left, right = dict(leaf_values(json.loads(a))), dict(leaf_values(json.loads(b)))
    except (ValueError, TypeError):
        return f"{a[:150]} vs {b[:150]}"
    for path in [*left, *(p for p in right if p not in left)]:
        if left.get(path, "(absent)") != right.get(path, "(absent)"):
            x, y = left.get(path), right.get(path)
            if isinstance(x, str) and isinstance(y, str) and max(len(_short(x)), len(_short(y))) > 80:
                return f"{path}: {_texts_apart(x, y)}"
            return f"{path}: {_short(left.get(path, '(absent)'))} vs {_short(right.get(path, '(absent)'))}"
    return "the same fields in a different order"
