"""TRL's own GRPOConfig fields, for checking a run's advanced settings in the web process without importing TRL.

The table comes from the installed TRL (`python -m workers.grpo_config fields`, ~5 s) and is kept in the data folder
under TRL's version, so a TRL upgrade reads its fields again. Here only names and JSON types are checked, at once;
the values are judged by TRL itself when the pre-flight job on a worker builds the real GRPOConfig.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.core.exceptions import ValidationError

REPO_ROOT = Path(__file__).resolve().parents[2]
ADVANCED_LIMIT_CHARS = 20_000
ADVANCED_LIMIT_KEYS = 100


def trl_version() -> str:
    try:
        return version("trl")
    except PackageNotFoundError:
        return "absent"


def _table_path() -> Path:
    return Path(settings.DATA_DIR) / "cache" / f"grpo-config-fields-trl-{trl_version()}.json"


@cache
def _table_read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["fields"]


def grpo_config_fields() -> dict[str, Any]:
    """name → {types, choices, default, help} of TRL's GRPOConfig (read once per TRL version, then cached)."""
    path = _table_path()
    if not path.exists():
        result = subprocess.run([sys.executable, "-m", "workers.grpo_config", "fields"], cwd=REPO_ROOT,
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        if result.returncode:
            raise RuntimeError(f"could not read TRL's GRPOConfig fields: {result.stderr[-800:]}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(result.stdout.strip().splitlines()[-1])
        tmp.replace(path)
    return _table_read(path)


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


def advanced_check(advanced: dict[str, Any]) -> None:
    """Each key must be a GRPOConfig field the run may set, each value of a type TRL's field takes. Errors are on the
    'advanced' field and name the key."""
    from webapp.runs.grpo import GRPOSettings
    from workers.grpo_config import OWNED

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
    curated = set(GRPOSettings.__dataclass_fields__) - {"advanced"}
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
