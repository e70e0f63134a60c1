"""Tools from an environment's action schema, so that no environment needs hand-written glue.

An action model is one tool: its name is `x-tool-name` (or the model's title without "Action", in snake case),
its description the model's docstring, its parameters the model's fields less OpenEnv's `metadata`. A schema
whose top level is a `oneOf`/`anyOf` of action models gives one tool per member.

An MCP environment (its actions are OpenEnv's `CallToolAction`/`ListToolsAction`) is different: its one action is a
generic `call_tool(tool_name, arguments)`, and its real tools are what the server lists. Each listed tool becomes a
ToolSpec with `mcp=True`, whose arguments travel inside a `call_tool` action on the same session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
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
    mcp: bool = False  # arguments travel as {"type": "call_tool", "tool_name": name, "arguments": {...}}
    fixed_arguments: dict[str, Any] = field(default_factory=dict)  # per-version values, hidden from the model

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description, "parameters": self.parameters}
        if self.action_fields:
            out["action_fields"] = self.action_fields
        if self.mcp:
            out["mcp"] = True
        if self.fixed_arguments:
            out["fixed_arguments"] = self.fixed_arguments
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolSpec:
        known = {"name", "description", "parameters", "action_fields", "mcp", "fixed_arguments"}
        return cls(**{k: v for k, v in data.items() if k in known})

    def action(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The wire action of one call: the model's arguments plus what the tool and the version fix."""
        merged = {**arguments, **self.fixed_arguments}
        if self.mcp:
            return {"type": "call_tool", "tool_name": self.name, "arguments": merged}
        return {**self.action_fields, **merged}

    def with_fixed(self, fixed: dict[str, Any]) -> ToolSpec:
        """This tool with some arguments fixed per version: sent automatically, no longer offered to the model."""
        properties = self.parameters.get("properties", {})
        mine = {k: v for k, v in fixed.items() if k in properties}
        if not mine:
            return self
        parameters = {
            **self.parameters,
            "properties": {k: v for k, v in properties.items() if k not in mine},
            "required": [k for k in self.parameters.get("required", []) if k not in mine],
        }
        return replace(self, parameters=parameters, fixed_arguments={**self.fixed_arguments, **mine})

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
    """A class name as a tool name a model can read: `GuessNumber` → `guess_number`, and an acronym stays one word
    (`REPL` → `repl`, `DMControl` → `dm_control`, not `r_e_p_l`)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


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


SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")


def split_docstring(text: str) -> tuple[str, dict[str, str]]:
    """A Google-style docstring as (one-paragraph summary, {argument: description}).

    MCP servers send a tool's whole docstring as its description; the adapter writes its own `Args:` section, and
    TRL reads only the text before it, so the sections must not stay in the summary.
    """
    summary: list[str] = []
    arguments: dict[str, str] = {}
    section, current = None, None
    for line in text.splitlines():
        heading = SECTION.match(line)
        if heading:
            section, current = heading.group(1), None
            continue
        if section is None:
            summary.append(line.strip())
        elif section in {"Args", "Arguments", "Parameters"}:
            entry = re.match(r"^\s*(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$", line)
            if entry:
                current = entry.group(1)
                arguments[current] = entry.group(2).strip()
            elif current and line.strip():
                arguments[current] = (arguments[current] + " " + line.strip()).strip()
    return " ".join(" ".join(summary).split()), arguments


def example_arguments(tool: ToolSpec) -> dict[str, Any]:
    """Schema-valid arguments for a tool: the first enum value, a default, an example, the minimum, else a plain
    value of the right type. What test drives and pre-flights send when nobody chose."""
    arguments: dict[str, Any] = {}
    properties = tool.parameters.get("properties", {})
    for name in tool.parameters.get("required", []):
        prop = properties.get(name, {})
        if "enum" in prop:
            arguments[name] = prop["enum"][0]
        elif "default" in prop:
            arguments[name] = prop["default"]
        elif prop.get("examples"):
            arguments[name] = prop["examples"][0]
        elif "minimum" in prop:
            arguments[name] = prop["minimum"]
        else:
            plain = {"integer": 1, "number": 1.0, "boolean": True, "string": "hello", "array": [], "object": {}}
            arguments[name] = plain.get(prop.get("type"), "hello")
    return arguments
