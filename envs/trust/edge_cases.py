"""Inputs that explore: edge-case values for every field of a tool's JSON schema, and the actions made of them.

A handful of friendly words never finds the input that hangs a step or crashes a parser. Here each field of each
tool is varied over the values where code tends to break (empty, one past the maximum, runs of one character,
unicode, numerals in text, huge numbers, …) while the other fields keep a valid value; random valid actions
follow. The probes draw from one list, deduplicated, in a fixed order, so a finding can be replayed.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from typing import Any

from envs.actions import random_arguments
from envs.tools import ToolSpec

RUN_LENGTHS = (1, 2, 3, 4, 5, 8)
WHITESPACE = [" ", "   ", "\t", "\n", " a ", "a b"]
UNICODE = ["é", "ß", "日本語", "🙂", "e\u0301", "\u200b", "Ω" * 3, "\u202eabc"]
NUMERALS = ["0", "-1", "1", "42", "3.14", "1e9", "NaN", "-0", "9" * 20]
HUGE = [2**31 - 1, 2**31, 2**53 + 1, 2**63, -(2**63) - 1]


@dataclass(frozen=True)
class EdgeInput:
    """One action to try, with what it varies: `tool(field=value)`."""

    tool: str
    field: str | None
    value: Any
    action: dict[str, Any]

    @property
    def label(self) -> str:
        if self.field is None:
            return f"{self.tool}({json.dumps(self.action, default=str)[:80]})"
        shown = json.dumps(self.value, ensure_ascii=False, default=str)
        return f"{self.tool}({self.field}={shown if len(shown) <= 40 else shown[:37] + '…'})"


def _string_values(prop: dict[str, Any]) -> list[str]:
    low = int(prop.get("minLength", 0))
    high = prop.get("maxLength")
    lengths = sorted({n for n in (*RUN_LENGTHS, low, high) if n is not None and n >= max(low, 1)})
    if high is not None:
        lengths = [n for n in lengths if n <= high]
    values = ["", "a"]
    # Runs of one character, across the alphabet and the digits, at short lengths (and the schema's bounds).
    values += [c * n for n in lengths for c in string.ascii_lowercase + string.digits]
    values += [c.upper() * n for n in lengths[:2] for c in string.ascii_lowercase[:3]]
    if high is not None:
        values += ["x" * high, "x" * (high + 1)]
    else:
        values += ["x" * 256, "x" * 4096]
    if low > 1:
        values.append("x" * (low - 1))
    values += WHITESPACE + UNICODE + NUMERALS
    for key in ("examples", "default"):
        extra = prop.get(key)
        values += [v for v in (extra if isinstance(extra, list) else [extra]) if isinstance(v, str)]
    return values


def _number_values(prop: dict[str, Any], integer: bool) -> list[Any]:
    values: list[Any] = [0, 1, -1]
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in prop:
            values += [prop[key], prop[key] - 1, prop[key] + 1]  # the bound and one past it either way
    values += HUGE + [-v for v in HUGE[:2]]
    if not integer:
        values += [0.5, -0.5, 1e-9, 1e308, -1e308]
    values += [v for v in prop.get("examples", []) if isinstance(v, int | float)]
    return [int(v) if integer and float(v).is_integer() else v for v in values]


def edge_values(prop: dict[str, Any], depth: int = 0) -> list[Any]:
    """Values of one schema field where implementations tend to break, valid and one step past valid."""
    if "enum" in prop:
        return list(prop["enum"])
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return [v for option in prop[key] for v in edge_values(option, depth)]
    kind = prop.get("type")
    if isinstance(kind, list):
        return [v for k in kind for v in edge_values({**prop, "type": k}, depth)]
    if kind == "string":
        return _string_values(prop)
    if kind in {"integer", "number"}:
        return _number_values(prop, kind == "integer")
    if kind == "boolean":
        return [True, False]
    if kind == "null":
        return [None]
    if kind == "array":
        item = prop.get("items") or {}
        inner = edge_values(item, depth + 1)[:3] if depth < 2 else []
        return [[], [inner[0]] if inner else [None], inner * 20 if inner else [[]], [[]]]
    if kind == "object":
        return [{}, {"": None}, {"a": {"b": {"c": []}}}]
    return []


def _key(action: dict[str, Any]) -> str:
    return json.dumps(action, sort_keys=True, default=str)


def edge_inputs(tools: list[ToolSpec], *, seed: int = 0, random_count: int = 24) -> list[EdgeInput]:
    """Every tool's fields over their edge values (one field at a time, the others valid), then random valid
    actions; deduplicated, in a fixed order for a given seed."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[EdgeInput] = []

    def add(item: EdgeInput) -> None:
        key = _key(item.action)
        if key not in seen:
            seen.add(key)
            out.append(item)

    for tool in tools:
        base = random_arguments(tool, rng)
        for field, prop in tool.parameters.get("properties", {}).items():
            for value in edge_values(prop):
                add(EdgeInput(tool.name, field, value, tool.action({**base, field: value})))
        add(EdgeInput(tool.name, None, None, tool.action({})))
    for _ in range(random_count if tools else 0):
        tool = rng.choice(tools)
        add(EdgeInput(tool.name, None, None, tool.action(random_arguments(tool, rng))))
    return out
