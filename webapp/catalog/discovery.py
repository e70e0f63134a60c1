"""Ask a running OpenEnv server what it is: /schema (action, observation, state) and /metadata, then derive tools:
one per action model, or, for an MCP environment, the tools its server lists. A server with no /schema that
answers MCP on POST /mcp (RFC 003's HTTP template, OpenEnv's calendar) is an MCP environment reached over HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from envs.contract import ContractUnreadable, schema_read
from envs.mcp_tools import is_mcp_action_schema, list_mcp_http_tools, list_mcp_tools
from envs.session import EnvError, SessionBroken
from envs.tools import SchemaError, ToolSpec, tools_from_action_schema


class DiscoveryError(Exception):
    pass


@dataclass(frozen=True)
class Discovered:
    action_schema: dict[str, Any]
    observation_schema: dict[str, Any]
    state_schema: dict[str, Any]
    metadata: dict[str, Any]
    tools: list[ToolSpec]
    mcp: bool = False
    transport: str = "ws"  # "http": a server that serves no /ws (envs.http_session)


def discover(endpoint: str, *, timeout: float = 10.0) -> Discovered:
    try:
        body = schema_read(endpoint, timeout=timeout)
    except ContractUnreadable as exc:
        try:
            listed = list_mcp_http_tools(endpoint, timeout=timeout)
        except SchemaError as listing:
            raise DiscoveryError(f"{exc}; its MCP endpoint (POST /mcp) lists no usable tools: {listing}") from exc
        if listed is None:
            raise DiscoveryError(f"{exc}, and it answers no MCP tools/list on POST /mcp either") from exc
        return Discovered(action_schema={}, observation_schema={}, state_schema={}, metadata=_metadata(endpoint,
                          timeout), tools=listed, mcp=True, transport="http")  # fmt: skip
    mcp = is_mcp_action_schema(body["action"])
    try:
        tools = list_mcp_tools(endpoint, timeout=timeout) if mcp else tools_from_action_schema(body["action"])
    except SchemaError as exc:
        raise DiscoveryError(f"the action schema cannot become tools: {exc}") from exc
    except (EnvError, SessionBroken) as exc:
        raise DiscoveryError(f"listing the MCP tools failed: {exc}") from exc
    return Discovered(
        action_schema=body["action"],
        observation_schema=body.get("observation") or {},
        state_schema=body.get("state") or {},
        metadata=_metadata(endpoint, timeout),
        tools=tools,
        mcp=mcp,
    )


def _metadata(endpoint: str, timeout: float) -> dict[str, Any]:
    try:
        response = httpx.get(f"{endpoint}/metadata", timeout=timeout)
        if response.status_code == 200 and isinstance(response.json(), dict):
            return response.json()
    except (httpx.HTTPError, ValueError):
        pass
    return {}
