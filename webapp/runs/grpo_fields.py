"""A run's advanced settings (any other GRPOConfig field, as JSON or YAML): parsed, and checked at once against
TRL's own fields (webapp.runs.trl_fields) by name and JSON type, in the web process without importing TRL. The
values are judged by TRL itself when the pre-flight job on a worker builds the real GRPOConfig.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from django.core.exceptions import ValidationError

from webapp.runs.trl_fields import OWNED, grpo_config_fields, trl_version

ADVANCED_LIMIT_CHARS = 20_000
ADVANCED_LIMIT_KEYS = 100


def advanced_parse(value: Any) -> dict[str, Any]:
    """The advanced box: a mapping, or its text as JSON or YAML (YAML reads JSON too). Empty text is no settings."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise ValueError("advanced must be a mapping of GRPOConfig fields to values (JSON or YAML).")
    if len(value) > ADVANCED_LIMIT_CHARS or "\x00" in value:
        raise ValueError(f"advanced must be at most {ADVANCED_LIMIT_CHARS:,} characters of JSON or YAML.")
    if not value.strip():
        return {}
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise ValueError(f"advanced is neither JSON nor YAML{at}: {getattr(exc, 'problem', exc)}.") from None
    if parsed is None:
        return {}
    if not isinstance(parsed, dict) or not all(isinstance(k, str) for k in parsed):
        raise ValueError('advanced must be a mapping of GRPOConfig field names to values, e.g. {"weight_decay": 0.01}.')
    return parsed


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__  # YAML dates and the like: no GRPOConfig field takes them


def advanced_check(advanced: dict[str, Any], *, curated: set[str]) -> None:
    """Each key must be a GRPOConfig field the run may set (not one of the `curated` settings, which have fields of
    their own, nor one the worker owns), each value of a type TRL's field takes. Errors are on the 'advanced' field
    and name the key."""
    if not advanced:
        return
    if len(advanced) > ADVANCED_LIMIT_KEYS:
        raise ValidationError({"advanced": f"advanced sets {len(advanced)} fields; at most {ADVANCED_LIMIT_KEYS}."})
    try:
        json.dumps(advanced, allow_nan=False)
    except ValueError:
        raise ValidationError({"advanced": "advanced values must be finite numbers, text, lists, mappings."}) from None
    except TypeError as exc:
        raise ValidationError({"advanced": f"advanced holds a value JSON cannot carry: {exc}."}) from None
    table = grpo_config_fields()
    problems = []
    for key, value in advanced.items():
        if key in curated:
            problems.append(f"{key}: has its own field on the form; set it there.")
        elif key in OWNED:
            problems.append(f"{key}: not a run's to set ({OWNED[key]}).")
        elif key not in table:
            near = sorted(name for name in table if key.lower() in name or name in key.lower())[:3]
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            problems.append(f"{key}: TRL {trl_version()}'s GRPOConfig has no such field{hint}.")
        else:
            spec = table[key]
            kind = _json_type(value)
            if "any" not in spec["types"] and kind not in spec["types"]:
                problems.append(f"{key}: takes {' or '.join(spec['types'])}, not {kind} ({str(value)[:40]!r}).")
            elif spec["choices"] and kind == "string" and value not in spec["choices"]:
                problems.append(f"{key}: one of {', '.join(spec['choices'][:12])}, not {str(value)[:40]!r}.")
    if problems:
        raise ValidationError({"advanced": problems})
