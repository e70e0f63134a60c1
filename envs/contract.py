"""An environment's contract: what a policy trained against it relies on. The action, observation and state
schemas its server publishes at /schema, and for an MCP environment the tools it lists.

A catalog version pins its contract when it is added. A URL or image can change under us (a redeploy, a moved
tag); a run provisioned against a server whose contract differs would train on tools its version never had, so
provisioning re-reads the contract and refuses with a readable difference. The same comparison tells whether a
production deployment exposes the tools and schemas a model was trained against.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx

from envs.mcp_tools import is_mcp_action_schema, list_mcp_http_tools, list_mcp_tools
from envs.session import EnvError, SessionBroken
from envs.tools import SchemaError

PARTS = ("action", "observation", "state")


def contract_of(
    *,
    action: dict[str, Any],
    observation: dict[str, Any],
    state: dict[str, Any],
    mcp_tools: list[dict] | None,
    transport: str = "ws",
) -> dict[str, Any]:
    contract: dict[str, Any] = {"action": action or {}, "observation": observation or {}, "state": state or {}}
    if mcp_tools is not None:
        contract["tools"] = {t["name"]: t.get("parameters", {}) for t in mcp_tools}
    if transport != "ws":  # named only when it is not OpenEnv's usual /ws, so that older pins keep their hash
        contract["transport"] = transport
    return contract


def contract_hash(contract: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(contract, sort_keys=True, default=str).encode()).hexdigest()


class ContractUnreadable(Exception):
    pass


def schema_read(endpoint: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """A server's /schema body: action (always a JSON schema object here), observation and state."""
    try:
        response = httpx.get(f"{endpoint}/schema", timeout=timeout)
        response.raise_for_status()
        body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ContractUnreadable(f"GET {endpoint}/schema failed: {exc}") from exc
    if not isinstance(body, dict) or not isinstance(body.get("action"), dict):
        raise ContractUnreadable("the server's /schema has no action schema")
    return body


def contract_read(endpoint: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """The contract a running server publishes now (an HTTP-only MCP server's: its tools, and that it is one)."""
    try:
        body = schema_read(endpoint, timeout=timeout)
    except ContractUnreadable:
        try:
            listed = list_mcp_http_tools(endpoint, timeout=timeout)
        except SchemaError as exc:
            raise ContractUnreadable(f"listing the MCP tools on POST /mcp failed: {exc}") from exc
        if listed is None:
            raise
        return contract_of(action={}, observation={}, state={}, mcp_tools=[t.as_dict() for t in listed],
                           transport="http")  # fmt: skip
    mcp_tools = None
    if is_mcp_action_schema(body["action"]):
        try:
            mcp_tools = [t.as_dict() for t in list_mcp_tools(endpoint, timeout=timeout)]
        except (EnvError, SessionBroken, SchemaError, KeyError, TypeError) as exc:
            raise ContractUnreadable(f"listing the MCP tools failed: {exc}") from exc
    return contract_of(action=body["action"], observation=body.get("observation") or {},
                       state=body.get("state") or {}, mcp_tools=mcp_tools)  # fmt: skip


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 100 else text[:97] + "…"


def _walk(old: Any, new: Any, path: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys(), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in new:
                out.append(f"- {where} (was {_short(old[key])})")
            elif key not in old:
                out.append(f"+ {where} = {_short(new[key])}")
            else:
                _walk(old[key], new[key], where, out)
    elif old != new:
        out.append(f"~ {path}: {_short(old)} → {_short(new)}")


def contract_diff(pinned: dict[str, Any], now: dict[str, Any], limit: int = 20) -> list[str]:
    """Readable differences, one per line: `- removed`, `+ added`, `~ path: old → new` (empty: the same)."""
    out: list[str] = []
    _walk(pinned, now, "", out)
    return out[:limit] + ([f"… and {len(out) - limit} more"] if len(out) > limit else [])
