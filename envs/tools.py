"""Tools from an environment's action schema, so that no environment needs hand-written glue.

An action model is one tool: its name is `x-tool-name` (or the model's title without "Action", in snake case),
its description the model's docstring, its parameters the model's fields less OpenEnv's `metadata`. A schema
whose top level is a `oneOf`/`anyOf` of action models gives one tool per member.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

RESERVED = {"metadata"}


class SchemaError(ValueError):
    pass


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # a JSON Schema object
    action_fields: dict[str, Any] = field(default_factory=dict)  # fixed fields that select this tool

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def arguments(self) -> list[dict[str, Any]]:
        """Rows for an argument table: name, type, required, description."""
        required = set(self.parameters.get("required", []))
        rows = []
        for name, prop in self.parameters.get("properties", {}).items():
            rows.append(
                {
                    "name": name,
                    "type": type_label(prop),
                    "required": name in required,
                    "description": prop.get("description", ""),
                    "enum": prop.get("enum"),
                    "default": prop.get("default"),
                }
            )
        return rows


def type_label(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(repr(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " | ".join(type_label(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list[{type_label(prop.get('items', {}))}]"
    return str(kind)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not ref:
        return schema
    if not ref.startswith("#/$defs/"):
        raise SchemaError(f"unsupported $ref {ref!r}")
    target = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
    if target is None:
        raise SchemaError(f"dangling $ref {ref!r}")
    return _resolve(target, root)


def _inline(prop: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    prop = dict(_resolve(prop, root)) if "$ref" in prop else dict(prop)
    prop.pop("title", None)
    if "anyOf" in prop:
        prop["anyOf"] = [_inline(p, root) for p in prop["anyOf"]]
    if "items" in prop and isinstance(prop["items"], dict):
        prop["items"] = _inline(prop["items"], root)
    return prop


def _tool_from_model(model: dict[str, Any], root: dict[str, Any]) -> ToolSpec:
    if model.get("type") != "object" or not isinstance(model.get("properties"), dict):
        raise SchemaError("an action schema must be an object with properties")
    title = str(model.get("title") or "action")
    name = model.get("x-tool-name") or snake(title.removesuffix("Action")) or "act"
    if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name):
        raise SchemaError(f"tool name {name!r} is not an identifier")
    properties, fixed = {}, {}
    for key, prop in model["properties"].items():
        if key in RESERVED:
            continue
        prop = _inline(prop, root)
        if "const" in prop:  # a discriminator field: sent automatically, never asked of the model
            fixed[key] = prop["const"]
            continue
        properties[key] = prop
    required = [k for k in model.get("required", []) if k in properties]
    description = " ".join(str(model.get("description") or f"Take the {name} action.").split())
    parameters = {"type": "object", "properties": properties, "required": required}
    return ToolSpec(name=name, description=description, parameters=parameters, action_fields=fixed)


def tools_from_action_schema(schema: dict[str, Any]) -> list[ToolSpec]:
    if not isinstance(schema, dict):
        raise SchemaError("the action schema is not a JSON object")
    members = schema.get("oneOf") or schema.get("anyOf")
    models = [_resolve(m, schema) for m in members] if members else [schema]
    tools = [_tool_from_model(m, schema) for m in models]
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise SchemaError(f"tool names collide: {names}")
    return tools
