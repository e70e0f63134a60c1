"""A version's settings: its server's environment variables, action fields fixed per version, the tools a model is
offered, what the model reads of an observation, and which dataset columns reach reset(). Validated against what
the server described, so a typo is a field error, never a run that fails at step 1."""

from __future__ import annotations

import json
import re
from typing import Any

from django.core.exceptions import ValidationError
from packaging.requirements import InvalidRequirement, Requirement

from envs.data_assets import MAX_ASSETS, NAME, VARIABLE, Asset
from envs.rewards import SOURCES, RewardRuleError, reward_rule_check
from webapp.catalog.models import SETTING_KEYS

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
# Set by Trainyard itself on every server: a version may not change how many sessions it is started with.
RESERVED_ENV = {"MAX_CONCURRENT_ENVS", "OPENENV_MAX_SESSIONS", "HOST", "PORT", "PYTHONPATH"}
MAX_ENTRIES = 50
MAX_VALUE = 2000


def assignments_parse(items: list[str] | str, *, field: str, json_values: bool) -> dict[str, Any]:
    """`KEY=VALUE` items (a list, or one a line); with `json_values` the value is JSON (a bare word is a string)."""
    if isinstance(items, str):
        items = [line for line in items.splitlines() if line.strip()]
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValidationError({field: f"{item.strip()[:60]!r} is not KEY=VALUE."})
        if json_values:
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError:
                out[key] = value.strip()
        else:
            out[key] = value.strip()
    return out


def names_parse(raw: list[str] | str | None) -> list[str] | None:
    """A comma- or line-separated list of names; empty means "the default" (None)."""
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = [part for part in re.split(r"[,\n]", raw)]
    names = [str(part).strip() for part in raw if str(part).strip()]
    return names or None


def settings_clean(raw: dict[str, Any] | None, *, tools: list[dict], observation_schema: dict) -> dict[str, Any]:
    """The settings a version stores; each error names its key (env, fixed, observation_fields, reset_args)."""
    raw = dict(raw or {})
    unknown = sorted(set(raw) - set(SETTING_KEYS))
    if unknown:
        raise ValidationError({"settings": f"Unknown settings: {', '.join(unknown)}."})
    errors: dict[str, str] = {}
    out: dict[str, Any] = {}

    env = raw.get("env") or {}
    if not isinstance(env, dict) or len(env) > MAX_ENTRIES:
        errors["env"] = f"Environment variables are NAME=value pairs, at most {MAX_ENTRIES}."
    else:
        bad = [k for k in env if not ENV_NAME.fullmatch(str(k))]
        reserved = sorted(k for k in env if str(k).upper() in RESERVED_ENV)
        long = [k for k, v in env.items() if len(str(v)) > MAX_VALUE]
        if bad:
            errors["env"] = f"{bad[0]!r} is not a valid variable name."
        elif reserved:
            errors["env"] = f"{reserved[0]} is set by Trainyard (capacity and address); change the capacity instead."
        elif long:
            errors["env"] = f"The value of {long[0]} is longer than {MAX_VALUE} characters."
        elif env:
            out["env"] = {str(k): str(v) for k, v in env.items()}

    fixed = raw.get("fixed") or {}
    offered = {name for tool in tools for name in (tool.get("parameters") or {}).get("properties", {})}
    if not isinstance(fixed, dict) or len(fixed) > MAX_ENTRIES:
        errors["fixed"] = f"Fixed fields are FIELD=JSON pairs, at most {MAX_ENTRIES}."
    else:
        unknown_fields = sorted(set(fixed) - offered)
        if unknown_fields:
            errors["fixed"] = (f"{unknown_fields[0]!r} is not an argument of any tool (arguments: "
                               f"{', '.join(sorted(offered)) or 'none'}).")  # fmt: skip
        elif len(json.dumps(fixed, default=str)) > 20_000:
            errors["fixed"] = "Fixed fields are limited to 20,000 characters of JSON."
        elif fixed:
            out["fixed"] = fixed

    declared = set((observation_schema or {}).get("properties", {})) | {"metadata"}
    shown = names_parse(raw.get("observation_fields"))
    if shown is not None:
        unknown_fields = [f for f in shown if f not in declared]
        if unknown_fields:
            errors["observation_fields"] = (f"{unknown_fields[0]!r} is not an observation field (fields: "
                                            f"{', '.join(sorted(declared))}).")  # fmt: skip
        else:
            out["observation_fields"] = shown

    requirements = raw.get("requirements") or []
    if isinstance(requirements, str):
        requirements = [line.strip() for line in requirements.splitlines() if line.strip()]
    if not isinstance(requirements, list) or len(requirements) > MAX_ENTRIES:
        errors["requirements"] = f"Extra requirements are a list of at most {MAX_ENTRIES} PyPI requirements."
    else:
        for line in requirements:
            try:
                requirement = Requirement(str(line))
            except InvalidRequirement as exc:
                errors["requirements"] = f"{str(line)[:80]!r} is not a requirement: {exc}"
                break
            if requirement.url:
                errors["requirements"] = f"{line!r}: only packages from the package index, not URLs."
                break
        else:
            if requirements:
                out["requirements"] = [str(line).strip() for line in requirements]

    reward = raw.get("reward")
    if reward not in (None, "", {}):
        # A rule the version was given when it was added (declared, detected) keeps its source; a user's is "chosen".
        source = reward.get("source") if isinstance(reward, dict) and reward.get("source") in SOURCES else "chosen"
        fields = set((observation_schema or {}).get("properties", {})) if observation_schema else None
        try:
            rule = reward_rule_check({k: v for k, v in reward.items() if k != "source"} if isinstance(reward, dict)
                                     else reward, observation_fields=fields, source=source)  # fmt: skip
        except RewardRuleError as exc:
            errors["reward"] = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
        else:
            if rule.kind != "sum" or rule.source != "default":
                out["reward"] = rule.as_dict()

    assets = raw.get("assets") or []
    try:
        checked = [Asset.from_dict(a) for a in assets] if isinstance(assets, list) else None
    except (KeyError, TypeError, ValueError):
        checked = None
    if (
        checked is None
        or len(checked) > MAX_ASSETS
        or not all(NAME.fullmatch(a.name) and VARIABLE.fullmatch(a.variable) and len(a.sha256) == 64 for a in checked)
    ):
        errors["assets"] = "Assets are added with `manage.py env asset add` (or the version page), not typed in."
    elif checked:
        out["assets"] = [a.as_dict() for a in checked]

    offered_tools = names_parse(raw.get("offered_tools"))
    if offered_tools is not None:
        names = [t.get("name") for t in tools]
        unknown_tools = [n for n in offered_tools if n not in names]
        if unknown_tools:
            shown = (", ".join(names[:20]) or "none") + (f" and {len(names) - 20} more" if len(names) > 20 else "")
            errors["offered_tools"] = f"{unknown_tools[0][:100]!r} is not one of this server's tools ({shown})."
        elif len(offered_tools) > MAX_ENTRIES:
            errors["offered_tools"] = f"At most {MAX_ENTRIES} tools may be offered."
        else:
            out["offered_tools"] = [n for n in names if n in offered_tools]  # the server's order, once each

    reset_args = names_parse(raw.get("reset_args"))
    if reset_args is not None:
        bad = [a for a in reset_args if not IDENTIFIER.fullmatch(a)]
        if bad:
            errors["reset_args"] = f"{bad[0]!r} is not a column name."
        else:
            out["reset_args"] = reset_args
    if errors:
        raise ValidationError(errors)
    return out
