"""OpenEnv's MCP environments: recognising them, listing their real tools, reading their tool results.

An MCP environment's action schema is OpenEnv's `CallToolAction` (alone, or in a union with `ListToolsAction`): one
generic `call_tool(tool_name, arguments)`. Offering that to a model hides every real tool, so Trainyard lists the
tools once (a `list_tools` step on a /ws session, which any OpenEnv server accepts) and stores one ToolSpec per MCP
tool; calls then travel as `call_tool` actions on the rollout's own session. A server that serves no /ws (RFC 003's
HTTP template, envs.http_session) lists its tools on MCP's own `POST /mcp`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envs.http_session import mcp_http_tools
from envs.session import EnvError, EnvSession
from envs.tools import SchemaError, ToolSpec, _inline, _resolve, split_docstring

MCP_ACTION_TITLES = {"CallToolAction", "ListToolsAction"}


def is_mcp_action_schema(schema: dict[str, Any]) -> bool:
    """OpenEnv's MCP actions: `CallToolAction` alone, or a union with `ListToolsAction`."""
    if not isinstance(schema, dict):
        return False
    members = schema.get("oneOf") or schema.get("anyOf")
    models = [_resolve(m, schema) for m in members] if members else [schema]
    for model in models:
        properties = model.get("properties") or {}
        if model.get("title") in MCP_ACTION_TITLES or {"tool_name", "arguments"} <= set(properties):
            return True
    return False


def tools_from_mcp_listing(listed: list[dict[str, Any]]) -> list[ToolSpec]:
    """ToolSpecs from an MCP `tools/list` answer (OpenEnv's `input_schema` or MCP's `inputSchema`)."""
    tools = []
    for item in listed:
        name = str(item.get("name") or "")
        if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name):
            raise SchemaError(f"MCP tool name {name!r} is not an identifier")
        schema = item.get("input_schema") or item.get("inputSchema") or {"type": "object", "properties": {}}
        if schema.get("type", "object") != "object":
            raise SchemaError(f"MCP tool {name}'s input schema is not an object")
        summary, documented = split_docstring(str(item.get("description") or f"Call {name}."))
        properties = {}
        for key, prop in (schema.get("properties") or {}).items():
            prop = _inline(prop, schema)
            if not prop.get("description") and key in documented:
                prop["description"] = documented[key]
            properties[key] = prop
        required = [k for k in schema.get("required", []) if k in properties]
        description = summary or f"Call {name}."
        parameters = {"type": "object", "properties": properties, "required": required}
        tools.append(ToolSpec(name=name, description=description, parameters=parameters, mcp=True))
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise SchemaError(f"MCP tool names collide: {names}")
    return tools


def list_mcp_tools(endpoint: str, *, timeout: float = 30.0) -> list[ToolSpec]:
    """Ask a running MCP environment for its tools over /ws (a `list_tools` step needs no reset).

    OpenEnv's server reads a `list_tools` step only when the server's action class is CallToolAction itself; one
    whose class is a subclass (OpenEnv's finqa: `FinQACallToolAction`, which parses JSON-string arguments) refuses it
    as an invalid message. Such a server's tools are listed by its MCP endpoint (POST /mcp), as OpenEnv's client
    lists them."""
    try:
        with EnvSession(endpoint, timeout=timeout) as session:
            result = session.step({"type": "list_tools"})
    except EnvError as exc:
        if exc.code != "VALIDATION_ERROR":
            raise
        listed = list_mcp_http_tools(endpoint, timeout=timeout)
        if listed is None:
            raise
        return listed
    listed = result.observation.get("tools")
    if not isinstance(listed, list):
        error = (result.observation.get("metadata") or {}).get("error")
        raise SchemaError(f"the server did not list its MCP tools{': ' + str(error) if error else ''}")
    if not listed:
        raise SchemaError("the MCP server lists no tools")
    return tools_from_mcp_listing(listed)


def list_mcp_http_tools(endpoint: str, *, timeout: float = 10.0) -> list[ToolSpec] | None:
    """The tools an HTTP-only MCP server lists on `POST /mcp` (`tools/list`), or None when it serves no MCP there.
    Raises SchemaError when it lists none, or tools that cannot be offered to a model."""
    listed = mcp_http_tools(endpoint, timeout=timeout)
    if listed is None:
        return None
    if not listed:
        raise SchemaError("the MCP server lists no tools")
    return tools_from_mcp_listing(listed)


def mcp_result(observation: dict[str, Any]) -> tuple[str, str | None]:
    """(text for the model, error or None) of an MCP `CallToolObservation`.

    An MCP tool error is a tool error, never a protocol one: OpenEnv reports framework failures (`tool_not_found`,
    `timeout`, ...) in `error`, and FastMCP reports a tool that raised as a result with `is_error`/`isError`.
    """
    error = observation.get("error")
    if error:
        if isinstance(error, dict):
            return "", f"{error.get('error_type', 'error')}: {error.get('message', '')}".strip()
        return "", str(error)
    result = observation.get("result")
    text = mcp_text(result)
    raised = isinstance(result, dict) and (result.get("is_error") or result.get("isError"))
    if raised or REFUSED_IN_WORDS.match(text):
        return "", f"tool error: {text}"
    return text, None


# A refusal written as the tool's answer: OpenEnv's own MCP environments (finqa, coding_tools, jupyter, terminus, repl)
# return "Error: Table 'x' not found ...", "Error: Query must include filters ...", "Error executing query: ..." as a
# plain result, not as a tool error. Counted as accepted, a warm start taught such calls and a run's counters called
# them steps. Only the word and its colon (or "Error executing") opening the whole answer: "Errors: 0" is an answer.
REFUSED_IN_WORDS = re.compile(r"\s*(Error:|Error executing\b)")


def mcp_text(result: Any) -> str:
    if isinstance(result, dict):
        if isinstance(result.get("text"), str):  # RFC 003's HTTP template: {"text", "isError", "status_code"}
            return result["text"]
        if "data" in result and result["data"] is not None:
            data = result["data"]
            return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        content = result.get("content")
        if isinstance(content, list):
            texts = [str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text"]
            if texts:
                return "\n".join(texts)
        structured = result.get("structured_content") or result.get("structuredContent")
        if structured is not None:
            return json.dumps(structured, ensure_ascii=False, default=str)
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)
